"""A link stored in the results store that is not http(s) or relative (a ``javascript:`` URL
as a run's results folder) is text on the history page, not an href."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from tests.fakes.history_nights import plan, write

from harness.cli import main

HOSTILE = "javascript:alert(document.domain)"


def test_a_stored_javascript_link_is_text_on_the_history_page(tmp_path: Path) -> None:
    store = tmp_path / "history.sqlite"
    night = write(plan()[0], tmp_path / "nights")
    assert main(["history", "import", str(night), "--hil-db", str(store)]) == 0
    with sqlite3.connect(store) as db:  # as another writer of the store could have left it
        assert db.execute("UPDATE runs SET results = ?", (HOSTILE,)).rowcount == 1
    assert main(["history", "--html", str(tmp_path / "page"), "--hil-db", str(store)]) == 0
    page = (tmp_path / "page" / "history.html").read_text()
    hrefs = re.findall(r'href="([^"]*)"', page)
    assert hrefs  # the night's bar still links, relative to the page
    assert all(href.startswith("./") for href in hrefs), hrefs
    assert "javascript:" not in page.replace("javascript%3A", "")
