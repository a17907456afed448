"""The Jinja2 environments the report and the history page are rendered with: templates shipped
inside their package (``templates/``), every ``*.html`` template autoescaped, and the ``href``
filter through which every link of a page goes.

Compiled templates are kept in ``~/.cache/npu-hil/templates`` (a private folder; Jinja2's
bytecode cache, keyed by each template's source): compiling the report's templates costs a
third of a second of CPU, more than rendering a one-model run's report (``hil run``). A folder
that cannot be used is no error: the templates are then compiled in every run.

A link made from stored data (a results folder, a bundle's path) becomes an href only when it
is an http(s) URL or relative: a ``javascript:`` or ``data:`` URL stays text (an ``<a>``
without href), whatever wrote it into a journal or a store.
"""

from __future__ import annotations

import contextlib
import re
from functools import cache
from pathlib import Path

from jinja2 import (
    Environment,
    FileSystemBytecodeCache,
    PackageLoader,
    StrictUndefined,
    select_autoescape,
)
from jinja2.bccache import Bucket
from markupsafe import Markup

from harness.private_folders import private_folder

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


class _CompiledTemplates(FileSystemBytecodeCache):
    """Jinja2's bytecode cache, its writes best effort: a full disk or a folder gone costs
    only the next run's compiling."""

    def dump_bytecode(self, bucket: Bucket) -> None:
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


def _compiled_templates() -> _CompiledTemplates | None:
    folder = Path.home() / ".cache" / "npu-hil" / "templates"
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        folder = private_folder(folder)
    except OSError:  # unwritable, or another user's: compiled every run
        return None
    return _CompiledTemplates(str(folder))


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
        bytecode_cache=_compiled_templates(),
    )
    env.filters["href"] = href
    return env
