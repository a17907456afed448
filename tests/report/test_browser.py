"""report.html in a real browser (headless Chromium from the distribution): it renders, the
first screen shows the counts, the changes against the baseline and the failing cases, every
link resolves, and an overview cell or a failing case opens its collapsed details."""

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

from harness.cases.case import Case
from harness.judge.verdict import FAILING_VERDICTS
from harness.report.causes import causes as report_causes
from harness.report.documented_rows import DOCUMENTED_KEY
from harness.report.matrix import CASE_PAGES, UNPROBED_KEY, build_report, case_anchor
from harness.results.case_records import case_record
from harness.results.journal import Journal, read_records, read_run_metadata, write_run_metadata
from harness.results.records import CaseRecord, case_slug
from harness.vendors.rknn.model_io.cases import documented_rows, model_io_cases

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

        # An overview cell opens its operator's first collapsed cases; a failing case opens
        # its card: on their case page, a link away.
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


# A real full matrix (`--platform all`, the eleven targets, SDK 2.5.0) as `hil report` saw it:
# what its report.html is made of. The synthetic run below has at least as much of each.
REAL_FULL_MATRIX = {
    "records": 12_449,
    "failing cases": 1_600,  # failing, or a known issue that changed
    "doc-drift": 2_354,
    "operators": 81,
    "heat-map rows": 2_931,  # operator x documented limit, summed over the platforms
    "documented rows": 146,  # seed 003, over the seven platform groups
    "unprobed rows": 986,
}
COPIES = 19  # of each recorded record per platform


def _copy(record: CaseRecord, platform: str, copy: int) -> CaseRecord:
    """A recorded record as one of a full matrix's: an operator of its own (copy mod 5) and a
    limit of its own (copy mod 8); copies 0-2 keep their failure or finding, 3-6 are doc drift
    (their failing checks), the others pass."""
    op = f"{record.op}{copy % 5 or ''}"
    limit = f"{op}/{record.limit.removeprefix(record.op + '/')}/{copy % 2}"
    value = f"{record.value}#{copy}"
    record = dataclasses.replace(
        record,
        id=f"{platform}/{op}/{record.dtype}/{value}",
        platform=platform,
        op=op,
        limit=limit,
        value=value,
    )
    if copy < 3:
        return record
    failing = [check for check in record.checks if check["status"] != "confirmed"]
    if copy < 7 and failing:
        checks = [
            {**c, "status": "doc-drift" if c in failing else c["status"]} for c in record.checks
        ]
        detail = f"{failing[0]['prop']}: {failing[0]['observed']}"
        return dataclasses.replace(
            record, verdict="doc-drift", detail=detail, checks=checks, known=None
        )
    checks = [{**check, "status": "confirmed"} for check in record.checks]
    return dataclasses.replace(record, verdict="confirmed", detail="", checks=checks, known=None)


def _io_record(case: Case, index: int) -> CaseRecord:
    """A seed-003 I/O case as the simulator records it: every other one doc drift."""
    status = "doc-drift" if index % 2 else "confirmed"
    check = {
        "prop": "input buffer stride",
        "limits": list(case.limits),
        "documented": "w_stride 40 | for width 33",
        "observed": "stride <48>",
        "status": status,
    }
    return case_record(
        case,
        backend="simulator",
        verdict=status,
        detail="input buffer stride: stride <48>" if index % 2 else "",
        checks=[check],
        sdk="2.5.0",  # as the recorded ones
    )


def _full_matrix(results: Path) -> list[CaseRecord]:
    """A full matrix's run made of recorded simulator records (``_copy``), the seed-003 I/O
    cases of every target and the documented limits no case probes (13 per operator, as in
    the real run); returns its records."""
    recorded = read_records(RECORDED)
    records = [
        _copy(record, platform, copy)
        for platform in PLATFORMS
        for copy in range(COPIES)
        for record in recorded
    ]
    records += [_io_record(case, index) for index, case in enumerate(model_io_cases("all"))]
    journal = Journal(results)
    for record in records:
        journal.append(record, sync=False)
    journal.sync()
    unprobed = [
        {"platform": platform, "limit": f"{op}/X/property{k}", "reason": UNPROBED_REASONS[k % 4]}
        for platform in PLATFORMS
        for op in sorted({record.op for record in records})
        for k in range(13)
    ]
    meta = {"platform": "all", "tier": "default", UNPROBED_KEY: unprobed}
    write_run_metadata(results, {**meta, DOCUMENTED_KEY: documented_rows("all")})
    return records


UNPROBED_REASONS = [  # the real run's most frequent ones
    "stated by the entry this one fuses onto, and probed there",
    "the models have the documented rank; other ranks are not built",
    "the int8 cases use the toolkit's default per-layer quantization; the scheme itself is not "
    "varied",
    "the data dtype is probed by every case (one per dtype)",
]


def test_a_full_matrix_report_stays_small_with_its_cards_a_link_away(tmp_path: Path) -> None:
    """A full matrix at least the size of a real one (``REAL_FULL_MATRIX``): report.html at
    most 3 MB, every case a link or two away (its card on its platform's page, the failing
    ones listed per platform, every cause's cases on the cause's page), and the page opens in
    Chromium with its causes first."""
    results = tmp_path / "results"
    records = _full_matrix(results)
    report = build_report(records, read_run_metadata(results), {})
    made = {
        "records": len(records),
        "failing cases": len(report.failures),
        "doc-drift": sum(record.verdict == "doc-drift" for record in records),
        "operators": len(report.overview),
        "heat-map rows": sum(len(section.rows) for section in report.sections),
        "documented rows": sum(len(section.rows) for section in report.documented),
        "unprobed rows": len(report.unprobed),
    }
    assert {key: made[key] >= real for key, real in REAL_FULL_MATRIX.items()} == dict.fromkeys(
        REAL_FULL_MATRIX, True
    ), made
    assert hil(["report", str(results)]) == 0
    page = results / "report.html"
    assert page.stat().st_size <= 3_000_000
    text = page.read_text(encoding="utf-8")
    assert "case-" not in "".join(  # no card inline: every card is on a case page
        re.findall(r'id="(case-[^"]*)"', text)
    )
    pages = {
        path.name: path.read_text(encoding="utf-8")
        for path in (results / CASE_PAGES).glob("*.html")
    }
    cause_pages = {name for name in pages if name.startswith("cause-")}
    assert len(pages) - len(cause_pages) == len(PLATFORMS)
    # every case is reachable: its card's page from report.html, the card on it; a failing
    # case from the failing cases, a cause's case from its cause's page
    linked = set(re.findall(rf'href="{CASE_PAGES}/([^"#]+)"', text))
    assert linked == set(pages)
    cards = {anchor for page in pages.values() for anchor in re.findall(r'id="(case-[^"]*)"', page)}
    assert {case_anchor(record) for record in records} <= cards
    failing = set(re.findall(r'href="[^"]*#(case-[^"]*)"', text.split('id="failures"')[1]))
    assert failing == {case_anchor(failure.record) for failure in report.failures}
    listed = {
        anchor
        for name in cause_pages
        for anchor in re.findall(r'href="[^"]*#(case-[^"]*)"', pages[name])
    }
    assert {case_anchor(r) for cause in report_causes(records) for r in cause.records} <= listed
    with Browser() as browser:
        browser.open(page.as_uri(), *FIRST_SCREEN)
        assert browser.evaluate("document.title") == "npu-hil report"
        headings = browser.evaluate("[...document.querySelectorAll('h2')].map(h => h.id)")
        assert headings[:2] == ["verdicts", "causes"]
        rows = browser.evaluate("document.querySelectorAll('table.causes tr').length")
        assert 20 < rows < 400  # causes, not 13,000 cases
        # the known issues as expected among the failing cases: collapsed, per platform
        groups = "#failures ~ details details.group"
        assert browser.evaluate(f"document.querySelectorAll('{groups}').length") == len(PLATFORMS)
        # what the browser lays out stays a small page's: tens of thousands of elements, not
        # the 150,000 of inline cards
        assert browser.evaluate("document.getElementsByTagName('*').length") < 40_000
        if SCREENSHOT:
            browser.screenshot(Path(SCREENSHOT).with_stem(Path(SCREENSHOT).stem + "-full-matrix"))


# A cell's background in each failing verdict's colour: only what fails a run is drawn so
FAILING_COLOURS = """(() => {
  const probe = document.createElement('span'); document.body.append(probe);
  const colours = ['violation', 'unrunnable', 'wrong-result'].map(v => {
    probe.className = 'v-' + v; return getComputedStyle(probe).backgroundColor; });
  probe.remove(); return colours; })()"""
# The elements painted so, but the legends that name the colours
PAINTED_FAILING = """((colours) => [...document.querySelectorAll('body *')]
  .filter(e => !e.closest('.legend, #verdicts + table'))
  .filter(e => colours.includes(getComputedStyle(e).backgroundColor))
  .map(e => e.outerHTML.slice(0, 120)))"""


def test_a_green_run_with_known_issues_draws_them_as_known_not_failing(tmp_path: Path) -> None:
    """The README's first run: Pow's two violations are known issues as recorded, so the run is
    green; its report says no cause fails, names the known ones in their own colour and word,
    and paints nothing, on report.html or the platform's page, in a failing verdict's colour."""
    results = tmp_path / "results"
    known = {"reference": "RK-1", "note": "", "status": "as-expected", "expected": "violation"}
    records = [
        make_record(f"rk3562/Pow/float16/values={n}", op="Pow", limit="Pow/Y/values", value=str(n))
        for n in range(1, 11)
    ]
    records += [
        make_record(
            f"rk3562/Pow/float16/values={n}",
            "violation",
            op="Pow",
            limit="Pow/Y/values",
            value=str(n),
            detail="placement: CPU fallback: Pow: Pow on CPU",
            known=known,
        )
        for n in (0, -1)
    ]
    journal = Journal(results)
    for record in records:
        journal.append(record)
    write_run_metadata(results, {"platform": "rk3562", "tier": "default"})
    assert hil(["report", str(results)]) == 0
    case_page = next((results / CASE_PAGES).glob("rk3562-simulator*.html"))
    with Browser() as browser:
        browser.open((results / "report.html").as_uri(), *FIRST_SCREEN)
        line = browser.evaluate(
            "[...document.querySelectorAll('#causes + p span')]"
            ".map(s => [s.innerText, s.className])"
        )
        assert line == [
            ["Failing: none.", "ok"],
            ["Known issues, as expected: 1 cause over 2 cases.", "v-known"],
        ]
        cell = browser.evaluate(
            "(() => { const td = document.querySelector('table.map td:nth-child(2)');"
            " return [td.innerText, td.title, td.className]; })()"
        )
        assert cell == ["10C 2V (2 known)", "known issues, as expected", "v-known"]
        colours = browser.evaluate(FAILING_COLOURS)
        assert browser.evaluate(f"{PAINTED_FAILING}({json.dumps(colours)})") == []
        browser.open(case_page.as_uri(), *FIRST_SCREEN)
        heat = browser.evaluate("document.querySelector('table.map td:nth-child(3)').className")
        assert heat == "v-known"
        assert browser.evaluate(f"{PAINTED_FAILING}({json.dumps(colours)})") == []
