"""The Jinja2 environments the report and the history page are rendered with: templates shipped
inside their package (``templates/``), every ``*.html`` template autoescaped, and the ``href``
filter through which every link of a page goes.

A link made from stored data (a results folder, a bundle's path) becomes an href only when it
is an http(s) URL or relative: a ``javascript:`` or ``data:`` URL stays text (an ``<a>``
without href), whatever wrote it into a journal or a store.
"""

from __future__ import annotations

import re
from functools import cache

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

LINK_SCHEMES = ("http", "https")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
# What browsers drop from a URL before reading its scheme ("java\tscript:" is javascript:),
# and spaces: refusing more than a browser would is safe
_IGNORED = re.compile(r"[\x00-\x20\x7f]")


def safe_link(url: str) -> bool:
    """Whether ``url`` may be an href: http(s), or relative (no scheme)."""
    scheme = _SCHEME.match(_IGNORED.sub("", url))
    return scheme is None or scheme.group(1).lower() in LINK_SCHEMES


def href(url: str) -> Markup:
    """`` href="URL"`` (escaped) for a ``safe_link``; nothing otherwise, so that its ``<a>``
    is text."""
    return Markup(' href="{}"').format(url) if safe_link(url) else Markup("")


@cache
def environment(package: str) -> Environment:
    """The environment of ``package``'s templates (``package/templates/``)."""
    env = Environment(
        loader=PackageLoader(package, "templates"),
        autoescape=select_autoescape(("html",)),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["href"] = href
    return env
