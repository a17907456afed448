"""The history page (``hil history --html DIR``) in a real browser (headless Chromium from the
distribution): it renders thirty nights without scripts, shows each platform and SDK's bars,
the recent changes, the flaky list and the latency trend, and its links open the nights'
reports (and the changed case's card in it)."""

from __future__ import annotations

import os
import re
import warnings
from html import unescape
from pathlib import Path
from urllib.parse import urljoin, urlsplit
from urllib.request import url2pathname

import pytest
from tests.fakes.history_nights import FLAPPING, REDEFINED, plan, write, write_all
from tests.helpers.browser import Browser

from harness.cli import main

SCREENSHOT = os.environ.get("HIL_HISTORY_SCREENSHOT")  # keep the first screen here, if set


def test_the_history_page_renders_and_its_links_open_the_nights_reports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nights = write_all(tmp_path / "nights", timed=True)
    store = str(tmp_path / "history.sqlite")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the killed night's truncated line
        assert main(["history", "import", *map(str, nights), "--hil-db", store]) == 0
        for folder in nights:
            assert main(["report", str(folder)]) == 0
    assert main(["history", "--html", str(tmp_path / "page"), "--hil-db", store]) == 0
    page = tmp_path / "page" / "history.html"
    assert capsys.readouterr().out.splitlines()[-1] == str(page)
    html = page.read_text()
    assert "<script" not in html and "http" not in html  # self-contained
    with Browser() as browser:
        browser.open(page.as_uri(), 1280, 900)
        if SCREENSHOT:
            browser.screenshot(Path(SCREENSHOT))
        headings = browser.evaluate("[...document.querySelectorAll('h3')].map(h => h.textContent)")
        assert headings[:2] == ["rknn: rk3562, SDK 2.3.2", "rknn: rk3562, SDK 2.5.0"]
        bars = browser.evaluate("document.querySelectorAll('a.night').length")
        assert bars == 30  # one per night, each SDK's nights under its own heading
        drawn = browser.evaluate(
            "[...document.querySelectorAll('rect.bar')].every("
            "r => r.getBoundingClientRect().height > 0)"
        )
        assert drawn
        changed = browser.evaluate(
            "[...document.querySelectorAll('#changed + table tr td:first-child')]"
            ".map(td => td.textContent)"
        )
        assert changed == [FLAPPING, REDEFINED]  # the latest change first
        flaky = browser.evaluate(
            "[...document.querySelectorAll('#flaky + table tr td:first-child')]"
            ".map(td => td.textContent)"
        )
        assert flaky == [FLAPPING, FLAPPING]  # once per SDK
        points = browser.evaluate("document.querySelectorAll('a.point').length")
        assert points == 30  # the timed case's median, night by night
        links = browser.evaluate(
            "[...document.querySelectorAll('a')].map(a => "
            "new URL(a.getAttribute('href'), document.baseURI).href)"
        )
        assert all(link.startswith("file://") for link in links)
        first_night, case_card = links[0], next(link for link in links if "#case-" in link)
        browser.open(first_night, 1280, 900)
        assert browser.evaluate("document.title") == "npu-hil report"
        assert browser.evaluate("location.pathname").endswith("results-2026-11-01/report.html")
        browser.open(case_card, 1280, 900)
        assert browser.evaluate("document.getElementById(location.hash.slice(1)) !== null")
        # the report's case cards are on a page of their own beside it, one per section
        assert browser.evaluate("document.title").endswith(": cases")
        assert "/report-cases/" in browser.evaluate("location.pathname")


def test_a_results_folder_named_like_a_url_is_linked_as_a_folder(tmp_path: Path) -> None:
    """A results folder beside the page named ``javascript:...`` (or holding ``#``, ``?``, ``%``)
    is linked as the folder it is, never as a script or another address."""
    page_folder = tmp_path / "page"
    names = ["javascript:alert(1)", "a #b?c=%41"]
    store = str(tmp_path / "history.sqlite")
    for night, name in zip(plan(), names, strict=False):
        written = write(night, page_folder)
        assert (
            main(["history", "import", str(written.rename(page_folder / name)), "--hil-db", store])
            == 0
        )
    assert main(["history", "--html", str(page_folder), "--hil-db", store]) == 0
    page = page_folder / "history.html"
    hrefs = [unescape(h) for h in re.findall(r'href="([^"]*)"', page.read_text())]
    assert hrefs
    linked = set()
    for href in hrefs:
        assert urlsplit(href).scheme == "" and href.startswith("./"), href
        url = urlsplit(urljoin(page.as_uri(), href))
        assert url.query == "" and url.fragment == "", href
        linked.add(Path(url2pathname(url.path)).name)
    assert linked == set(names)
