"""report.html in a real browser (headless Chromium from the distribution): it renders, the
first screen shows the counts, the changes against the baseline and the failing cases, every
link resolves, and a heat-map cell or a failing case opens its collapsed details."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

from tests.helpers import paths
from tests.helpers.browser import Browser
from tests.helpers.cli import hil
from tests.helpers.records import _records, make_record

from harness.judge.verdict import FAILING_VERDICTS
from harness.report.matrix import CASE_PAGES
from harness.results.journal import Journal, read_records, write_run_metadata
from harness.results.records import CaseRecord, case_slug

FIRST_SCREEN = (1280, 900)
SCREENSHOT = os.environ.get("HIL_REPORT_SCREENSHOT")  # keep the first screen here, if set


def _bundled(results: Path, record: CaseRecord) -> CaseRecord:
    """A case folder with what a bundle needs, so ``hil repro`` makes a real bundle."""
    case_dir = results / "cases" / case_slug(record.id)
    case_dir.mkdir(parents=True)
    (case_dir / "model.onnx").write_bytes(b"placeholder: neither report nor bundle reads it")
    (case_dir / "toolkit.json").write_text('{"target_platform": "rk3562"}')
    (case_dir / "reproduce.py").write_text("# the vendor's reproduction script\n")
    (case_dir / "inputs").mkdir()  # kept as a user's are: nothing to draw again
    (case_dir / "inputs" / "0_x.npy").write_bytes(b"placeholder")
    return dataclasses.replace(record, artifacts=f"cases/{case_dir.name}")


def _run(tmp_path: Path) -> Path:
    """A run with failures (one bundled, one a known issue as expected), a baseline it differs
    from, and slow cases left out."""
    results, baseline = tmp_path / "results", tmp_path / "baseline"
    records = _records()
    records += [
        make_record(f"rk3562/Pow/float16/values={n}", op="Pow", limit="Pow/Y/values", value=str(n))
        for n in range(40)
    ]
    failing = [r for r in records if r.verdict in FAILING_VERDICTS]
    known = {"reference": "RK-1234", "note": "CPU Pow", "status": "as-expected"}
    by_id = {failing[0].id: _bundled(results, failing[0])}
    by_id[failing[1].id] = dataclasses.replace(failing[1], known={**known, "expected": "violation"})
    records = [by_id.get(r.id, r) for r in records]
    journal = Journal(results)
    for record in records:
        journal.append(record)
    old = Journal(baseline)
    for record in records:
        old.append(dataclasses.replace(record, verdict="confirmed"))
    write_run_metadata(baseline, {"platform": "rk3562"})
    write_run_metadata(
        results,
        {
            "platform": "rk3562",
            "tier": "default",
            "baseline": str(baseline),
            # a farm's long path: the header wraps it instead of widening the page
            "known_issues": "/srv/board-farm/nightly/rk3562/known-issues/" + "x" * 60 + ".yaml",
            "left_out": [{"id": "rk3562/GRU/float16/seq_length=8192", "reason": "slow tier"}],
        },
    )
    assert hil(["repro", str(results), failing[0].id]) == 0
    assert hil(["report", str(results)]) == 0
    return results


def _resolves(results: Path, href: str) -> bool:
    """``href`` of report.html names a file there is, and an element id of it after a "#"."""
    name, _, fragment = href.partition("#")
    path = results / (name or "report.html")
    if not path.is_file():
        return False
    return not fragment or f'id="{fragment}"' in path.read_text(encoding="utf-8", errors="replace")


def _box(browser: Browser, selector: str) -> dict[str, float]:
    return dict(
        browser.evaluate(
            f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
            ".getBoundingClientRect();"
            " return {top: r.top, bottom: r.bottom, height: r.height}; })()"
        )
    )


def test_report_reads_first_screen_first_in_chromium(tmp_path: Path) -> None:
    results = _run(tmp_path)
    page = (results / "report.html").as_uri()
    width, height = FIRST_SCREEN
    with Browser() as browser:
        browser.open(page, width, height)
        assert browser.evaluate("document.title") == "npu-hil report"
        assert browser.evaluate("document.documentElement.scrollWidth") <= width

        # The first screen: counts, the changes against the baseline, the failing cases.
        for selector in ("#verdicts + table", "#changes + p", "#failures + table tr:nth-child(2)"):
            box = _box(browser, selector)
            assert box["height"] > 0 and box["top"] >= 0 and box["bottom"] <= height, selector
        summary = browser.evaluate("document.querySelector('#changes + p').innerText")
        assert "3 new failures" in summary  # the three failing cases were confirmed before
        failures = browser.evaluate(
            "[...document.querySelectorAll('#failures + table tr')].map(r => r.innerText)"
        )
        assert len(failures) == 1 + 2  # header + the failures not known (the known one apart)
        assert any("README" in row and "tar.gz" in row for row in failures)
        if SCREENSHOT:
            browser.screenshot(Path(SCREENSHOT))

        # Every link resolves: a file of the results folder (a case page, a bundle) and, after
        # a "#", an element of that page (of this one without a file).
        hrefs = browser.evaluate(
            "[...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))"
        )
        assert any("#" in h for h in hrefs) and any(h.startswith(CASE_PAGES) for h in hrefs)
        assert [h for h in hrefs if not _resolves(results, h)] == []

        # A heat-map cell opens its collapsed cases; a failing case opens its card: on their
        # case page, a link away.
        links = [
            browser.evaluate(f"document.querySelector({json.dumps(link)}).getAttribute('href')")
            for link in ("table.map td a", "#failures + table a[href*='#']")
        ]
        for href in links:
            browser.open(
                (results / href.split("#")[0]).as_uri() + "#" + href.split("#")[1], width, height
            )
            shown = browser.evaluate(
                f"(() => {{ const e = document.getElementById({json.dumps(href.split('#')[1])});"
                " const r = e.getBoundingClientRect();"
                " return [r.height > 0, r.top >= 0 && r.top < innerHeight]; })()"
            )
            assert shown == [True, True], href

        # Everything else starts collapsed: the page is short.
        browser.open(page, width, height)
        assert browser.evaluate("document.documentElement.scrollHeight") < 3 * height


# The eleven RKNN targets: a full matrix's sections
PLATFORMS = (
    *("rk3562", "rk3566", "rk3568", "rk3576", "rk3588", "rv1103", "rv1103b", "rv1106"),
    *("rv1106b", "rk2118", "rv1126b"),
)
RECORDED = paths.TESTS / "data" / "causes"


def test_a_full_matrix_report_stays_small_with_its_cards_a_link_away(tmp_path: Path) -> None:
    """13,167 records over the eleven targets, made of recorded simulator records (one in 13
    keeps its failure or finding, like a full matrix): report.html at most 3 MB, the cards on
    their platform's page, and the page opens in Chromium with its causes first."""
    results = tmp_path / "results"
    journal = Journal(results)
    recorded = read_records(RECORDED)
    for platform in PLATFORMS:
        for copy in range(19):
            for record in recorded:
                record = dataclasses.replace(
                    record,
                    id=f"{platform}/{record.op}/{record.dtype}/{record.value}#{copy}",
                    platform=platform,
                    value=f"{record.value}#{copy}",
                )
                if copy % 13:
                    checks = [{**check, "status": "confirmed"} for check in record.checks]
                    record = dataclasses.replace(
                        record, verdict="confirmed", detail="", checks=checks
                    )
                journal.append(record, sync=False)
    journal.sync()
    write_run_metadata(results, {"platform": "all", "tier": "default"})
    assert hil(["report", str(results)]) == 0
    page = results / "report.html"
    assert page.stat().st_size <= 3_000_000
    case_pages = sorted((results / CASE_PAGES).glob("*.html"))
    assert len(case_pages) == len(PLATFORMS)
    assert "case-" not in "".join(  # no card inline: every card is on a case page
        re.findall(r'id="(case-[^"]*)"', page.read_text(encoding="utf-8"))
    )
    with Browser() as browser:
        browser.open(page.as_uri(), *FIRST_SCREEN)
        assert browser.evaluate("document.title") == "npu-hil report"
        headings = browser.evaluate("[...document.querySelectorAll('h2')].map(h => h.id)")
        assert headings[:2] == ["verdicts", "causes"]
        rows = browser.evaluate("document.querySelectorAll('table.causes tr').length")
        assert 20 < rows < 200  # causes, not 13,167 cases
        # what the browser lays out stays a small page's: tens of thousands of elements, not
        # the 150,000 of inline cards
        assert browser.evaluate("document.getElementsByTagName('*').length") < 40_000
