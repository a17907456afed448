"""The report's performance section and ``hil diff``'s timing changes, on journals of timed runs.

The browser test renders report.html in headless Chromium: the chart is there, one bar per
case judged against the baseline, and every bar links to its case's card, which opens.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from browser import Browser
from test_journal import make_record
from test_reporting import hil

from harness.results.journal import Journal, write_run_metadata
from harness.results.latency import Threshold, latency_change
from harness.results.records import CaseRecord
from harness.targets.timing import timing_record

SCREENSHOT = os.environ.get("HIL_PERF_SCREENSHOT")  # keep the section's screenshot here, if set
LAYERS = [
    {"name": "conv_1", "op": "Conv", "target": "NPU", "time_us": 812.0},
    {"name": "pow_7", "op": "Pow", "target": "CPU", "time_us": 2390.0},
    {"name": "relu_2", "op": "Relu", "target": "NPU", "time_us": 35.0},
]


def timed(case_id: str, median_ms: float, **perf: object) -> CaseRecord:
    """A board record timed around ``median_ms`` (+-2%)."""
    samples = [median_ms / 1e3 * factor for factor in (0.98, 0.99, 1.0, 1.0, 1.01, 1.02, 1.03)]
    raw = {"clock": "wall", "warmup": 3, "samples_s": samples, **perf}
    return make_record(case_id, backend="board-a", perf=timing_record(raw))


def judged(record: CaseRecord, old: CaseRecord) -> CaseRecord:
    change = latency_change(old.perf, record.perf, Threshold()).to_json()
    return dataclasses.replace(record, perf={**record.perf, "baseline": change})


def timed_run(tmp_path: Path) -> Path:
    """A baseline and a run against it: one case 2x slower, one faster, the rest the same, a
    model with a per-layer table, and a case on the simulator (no timing)."""
    names = [f"rk3562/Expand/float16/h={n}" for n in range(6)]
    old = [timed(name, 4.0 + index) for index, name in enumerate(names)]
    new = [timed(name, 4.0 + index) for index, name in enumerate(names)]
    new[2] = timed(names[2], 2 * 6.0)
    new[4] = timed(names[4], 0.5 * 8.0)
    new[5] = timed(names[5], 9.0, layers=LAYERS)
    results, baseline = tmp_path / "results", tmp_path / "baseline"
    now = [judged(n, o) for n, o in zip(new, old, strict=True)]
    for folder, records in ((baseline, old), (results, now)):
        journal = Journal(folder)
        for record in records:
            journal.append(record)
        write_run_metadata(folder, {"platform": "rk3562"})
    sim = make_record("rk3562/Pow/float16/values=2", perf={"unavailable": "no timing on sim"})
    Journal(results).append(sim)
    write_run_metadata(results, {"platform": "rk3562", "baseline": str(baseline)})
    assert hil(["report", str(results)]) == 0
    return results


def test_the_performance_section_charts_each_case_and_links_its_card(tmp_path: Path) -> None:
    results = timed_run(tmp_path)
    page = (results / "report.html").as_uri()
    with Browser() as browser:
        browser.open(page, 1280, 900)
        section = browser.evaluate(
            "(() => { const s = document.getElementById('perf-chart');"
            " const r = s.getBoundingClientRect();"
            " return {w: r.width, h: r.height, scripts: document.scripts.length,"
            " bars: [...s.querySelectorAll('a.perf-bar')].map(a => [a.getAttribute('href'),"
            " a.querySelector('rect').getAttribute('fill'),"
            " a.querySelector('rect').getBoundingClientRect().width]) }; })()"
        )
        assert section["w"] > 300 and section["h"] > 6 * 12 and section["scripts"] == 0
        bars = section["bars"]
        assert len(bars) == 6  # the simulator's case has no bar
        colours = [fill for _, fill, _ in bars]
        assert colours.count("#c0392b") == 1 and colours.count("#2e8b57") == 1
        slower = bars[colours.index("#c0392b")]
        assert slower[2] > 100  # +100%: the full half-width
        browser.evaluate("document.getElementById('perf').scrollIntoView()")
        if SCREENSHOT:
            browser.screenshot(Path(SCREENSHOT))
        text = browser.evaluate("document.getElementById('perf').parentElement.innerText")
        assert "No timing for 1 case: no timing on sim" in text
        assert "Slowest layers of rk3562/Expand/float16/h=5" in text
        for href, _, _ in bars:  # every bar's case card exists on its case page
            name, _, target = href.partition("#")
            assert f'id="{target}"' in (results / name).read_text(encoding="utf-8"), href
        # ... and opens when followed
        name, _, target = bars[0][0].partition("#")
        browser.open(f"{(results / name).as_uri()}#{target}", 1280, 900)
        shown = browser.evaluate(
            f"(() => {{ const e = document.getElementById({json.dumps(target)});"
            " const r = e.getBoundingClientRect();"
            " return [r.height > 0, r.top >= 0 && r.top < innerHeight]; })()"
        )
        assert shown == [True, True]
    markdown = (results / "report.md").read_text()
    assert "## Performance" in markdown and "+100.0% regression" in markdown
    assert "| pow\\_7 | Pow | CPU | 2390 |" in markdown


def test_hil_diff_lists_the_timing_changes_beyond_the_threshold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = timed_run(tmp_path)
    capsys.readouterr()
    assert hil(["diff", str(tmp_path / "baseline"), str(results), "--json"]) == 1
    changes = json.loads(capsys.readouterr().out)["changes"]
    latency = [(c["case_id"], c["kind"]) for c in changes if c["kind"] in ("slower", "faster")]
    assert latency == [
        ("rk3562/Expand/float16/h=2", "slower"),
        ("rk3562/Expand/float16/h=4", "faster"),
    ]
    # a threshold of 150% sees neither change
    assert hil(["diff", str(tmp_path / "baseline"), str(results), "--perf-percent", "150"]) == 1
    table = capsys.readouterr().out
    assert "slower" not in table and "faster" not in table
    assert hil(["diff", str(tmp_path / "baseline"), str(results), "--perf-k", "-1"]) == 2
