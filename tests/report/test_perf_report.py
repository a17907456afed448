"""The report's performance section and ``hil diff``'s timing changes, on journals of timed runs.

The browser test renders report.html in headless Chromium: the chart is there, one bar per
case judged against the baseline, and every bar links to its case's card, which opens.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.helpers.browser import Browser
from tests.helpers.cli import hil
from tests.helpers.perf import timed_run

SCREENSHOT = os.environ.get("HIL_PERF_SCREENSHOT")  # keep the section's screenshot here, if set


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
