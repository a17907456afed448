"""The pages' templates: autoescaped, and a link becomes an href only when it is http(s) or
relative."""

from __future__ import annotations

from html import escape

import pytest

from harness.report.templating import environment


@pytest.mark.parametrize(
    ("url", "linked"),
    [
        ("https://redmine.example/issues/123", True),
        ("http://farm.example/night", True),
        ("./../nights/results-2026-11-01/report.html", True),
        ("report-cases/rk3562-simulator.html#case-1", True),
        ("#cause-1a2b3c4d5e", True),
        ("bundles/case:with-colon/README.md", True),  # a colon after a slash is no scheme
        ("javascript:alert(1)", False),
        ("JavaScript:alert(1)", False),
        (" java\tscript:alert(1)", False),  # browsers drop the tab and the space
        ("data:text/html,<script>alert(1)</script>", False),
        ("vbscript:msgbox(1)", False),
    ],
)
def test_only_http_or_relative_links_become_hrefs(url: str, linked: bool) -> None:
    template = environment("harness.history").from_string("<a{{ url | href }}>{{ text }}</a>")
    page = template.render(url=url, text="<night>")
    assert page == (f'<a href="{escape(url)}">' if linked else "<a>") + "&lt;night&gt;</a>"
