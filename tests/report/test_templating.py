"""The pages' templates: autoescaped, and a link becomes an href only when it is http(s) or
relative."""

from __future__ import annotations

import os
import stat
from html import escape
from pathlib import Path

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


def _rendered_with_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The history page's template rendered by a fresh environment with HOME at ``home``."""
    monkeypatch.setenv("HOME", str(home))
    environment.cache_clear()
    try:
        template = environment("harness.history").get_template("history.html")
    finally:
        environment.cache_clear()  # the next test's environment is made with its own HOME
    return template.filename or ""


def test_compiled_templates_are_kept_in_a_private_folder_of_the_users_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _rendered_with_home(tmp_path, monkeypatch)
    folder = tmp_path / ".cache" / "npu-hil" / "templates"
    kept = {path.name: path.stat().st_ino for path in folder.iterdir()}
    assert kept and stat.S_IMODE(folder.stat().st_mode) == 0o700
    _rendered_with_home(tmp_path, monkeypatch)  # read back: a rewrite would be a new file
    assert {path.name: path.stat().st_ino for path in folder.iterdir()} == kept


def test_a_cache_folder_that_cannot_be_used_costs_only_the_compiling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".cache" / "npu-hil").mkdir(parents=True)
    (tmp_path / ".cache" / "npu-hil" / "templates").write_text("not a folder")
    assert _rendered_with_home(tmp_path, monkeypatch).endswith("history.html")
    shared = tmp_path / "shared"
    (shared / ".cache" / "npu-hil" / "templates").mkdir(parents=True, mode=0o777)
    os.chmod(shared / ".cache" / "npu-hil" / "templates", 0o777)  # another user could write it
    assert _rendered_with_home(shared, monkeypatch).endswith("history.html")
    assert not any((shared / ".cache" / "npu-hil" / "templates").iterdir())
