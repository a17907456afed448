"""The report's performance section (``--perf``): latency per case, its change against the
baseline as an inline SVG chart (no scripts; each bar links to its case's card), and the
slowest layers of the cases that recorded a per-layer table.

The judgement against the baseline is the run's own (``perf.baseline`` of each record: the
threshold and the confirming re-run of ``harness.policy.perf``). Records without timing say
why (the simulator has none), instead of numbers.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from html import escape
from typing import Any

from harness.report.matrix import case_href
from harness.results.latency import IMPROVEMENT, REGRESSION
from harness.results.layer_times import ms, slowest_layers
from harness.results.records import CaseRecord

_COLOURS = {REGRESSION: "#c0392b", IMPROVEMENT: "#2e8b57"}
_OTHER = "#9aa0a6"
_ROW, _LABEL, _HALF = 18, 360, 150  # px: row height, label column, bar half-width (+-100%)
_CLAMP = 1.0  # changes beyond +-100% are drawn at the edge
_LABEL_CHARS = 52


def judgement(record: CaseRecord) -> dict[str, Any] | None:
    judged = record.perf.get("baseline")
    return judged if isinstance(judged, dict) and judged.get("old_median_s") else None


def change(judged: dict[str, Any]) -> float:
    """The median's relative change against the baseline (0.25: 25% slower)."""
    return float(judged["new_median_s"]) / float(judged["old_median_s"]) - 1


def perf_html(records: list[CaseRecord]) -> str:
    timed = [r for r in records if r.perf]
    if not timed:
        return ""
    parts = ['<h2 id="perf">Performance</h2>', _unavailable(timed)]
    measured = [r for r in timed if "median_s" in r.perf]
    judged = [r for r in measured if judgement(r)]
    if judged:
        counts = Counter(str(judgement(r)["verdict"]) for r in judged)  # type: ignore[index]
        said = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
        style = "bad" if counts.get(REGRESSION) else "ok"
        parts.append(
            f'<p>Median latency against the baseline: <span class="{style}">{escape(said)}'
            "</span>.</p>"
        )
        parts.append(chart_svg(judged))
    if measured:
        parts.append(_timing_table(measured))
    parts += [_layers(r) for r in measured if slowest_layers(r.perf)]
    return "\n".join(part for part in parts if part)


def chart_svg(records: list[CaseRecord]) -> str:
    """One bar per case: its median's change against the baseline, centred on 0%."""
    centre = _LABEL + _HALF
    height = _ROW * len(records) + 24
    width = centre + _HALF + 80
    rows = []
    for index, record in enumerate(records):
        judged = judgement(record)
        assert judged is not None
        ratio = change(judged)
        length = max(-_CLAMP, min(_CLAMP, ratio)) * _HALF
        y = index * _ROW + 4
        colour = _COLOURS.get(str(judged["verdict"]), _OTHER)
        label = record.id if len(record.id) <= _LABEL_CHARS else record.id[: _LABEL_CHARS - 1] + "…"
        rows.append(
            f'<a href="{case_href(record)}" class="perf-bar">'
            f"<title>{escape(record.id)}: {escape(str(judged['verdict']))}, median "
            f"{ms(judged['new_median_s'])} against {ms(judged['old_median_s'])}</title>"
            f'<text x="0" y="{y + 12}" font-size="11">{escape(label)}</text>'
            f'<rect x="{centre + min(length, 0):.1f}" y="{y + 2}" '
            f'width="{max(abs(length), 1):.1f}" height="{_ROW - 6}" fill="{colour}"/>'
            f'<text x="{centre + _HALF + 6}" y="{y + 12}" font-size="11">{ratio:+.1%}</text></a>'
        )
    axis_y = _ROW * len(records) + 18
    axis = (
        f'<line x1="{centre}" y1="0" x2="{centre}" y2="{axis_y - 12}" stroke="#444"/>'
        f'<text x="{centre - _HALF}" y="{axis_y}" font-size="10">-100%</text>'
        f'<text x="{centre - 8}" y="{axis_y}" font-size="10">0%</text>'
        f'<text x="{centre + _HALF - 30}" y="{axis_y}" font-size="10">+100%</text>'
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" id="perf-chart" role="img" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
        "<title>Median latency change per case against the baseline</title>"
        f"{axis}{''.join(rows)}</svg>"
    )


def _reasons(records: list[CaseRecord]) -> Counter[str]:
    """Why cases have no timing -> how many."""
    return Counter(str(r.perf["unavailable"]) for r in records if "unavailable" in r.perf)


def _unavailable(records: list[CaseRecord]) -> str:
    return "".join(
        f"<p>No timing for {n} case{'s' if n > 1 else ''}: {escape(why)}.</p>"
        for why, n in _reasons(records).items()
    )


def _timing_table(records: list[CaseRecord]) -> str:
    head = ["case", "median", "min", "p90", "MAD", "runs", "clock", "baseline", "change", "clocks"]
    rows = []
    for record in records:
        perf, judged = record.perf, judgement(record)
        cells = [
            f'<a href="{case_href(record)}"><code>{escape(record.id)}</code></a>',
            *(ms(perf[key]) for key in ("median_s", "min_s", "p90_s", "mad_s")),
            str(perf["runs"]),
            escape(str(perf["clock"])),
            ms(judged["old_median_s"]) if judged else "",
            f"{change(judged):+.1%} {escape(str(judged['verdict']))}" if judged else "",
            escape("changed: " + ", ".join(perf["clocks_changed"]))
            if perf.get("clocks_changed")
            else "",
        ]
        rows.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    header = "".join(f"<th>{cell}</th>" for cell in head)
    return (
        f"<details><summary>Timing of {len(records)} cases</summary>"
        f"<table><tr>{header}</tr>{''.join(rows)}</table></details>"
    )


def _layers(record: CaseRecord) -> str:
    layers = slowest_layers(record.perf)
    total = sum(float(layer["time_us"]) for layer in record.perf["layers"]) or math.inf
    rows = "".join(
        f"<tr><td>{escape(str(layer.get('name', '')))}</td><td>{escape(str(layer.get('op')))}"
        f"</td><td>{escape(str(layer.get('target')))}</td><td class=n>{layer['time_us']:.0f}"
        f"</td><td class=n>{float(layer['time_us']) / total:.0%}</td></tr>"
        for layer in layers
    )
    return (
        f"<h3>Slowest layers of <code>{escape(record.id)}</code></h3><table><tr><th>layer</th>"
        f"<th>op</th><th>target</th><th>time (us)</th><th>share</th></tr>{rows}</table>"
    )


def perf_markdown(records: list[CaseRecord], quote: Callable[[object], str]) -> list[str]:
    timed = [r for r in records if r.perf]
    if not timed:
        return []
    lines = ["## Performance", ""]
    for why, n in _reasons(timed).items():
        lines += [f"No timing for {n} case{'s' if n > 1 else ''}: {quote(why)}.", ""]
    measured = [r for r in timed if "median_s" in r.perf]
    if measured:
        lines += ["| case | median | p90 | MAD | runs | clock | baseline | change |"]
        lines += ["|---|---|---|---|---|---|---|---|"]
        for record in measured:
            perf, judged = record.perf, judgement(record)
            lines.append(
                f"| {quote(record.id)} | {ms(perf['median_s'])} | {ms(perf['p90_s'])} | "
                f"{ms(perf['mad_s'])} | {perf['runs']} | {quote(perf['clock'])} | "
                + (
                    f"{ms(judged['old_median_s'])} | {change(judged):+.1%} {judged['verdict']} |"
                    if judged
                    else " | |"
                )
            )
        lines.append("")
    for record in measured:
        layers = slowest_layers(record.perf)
        if layers:
            lines += [f"Slowest layers of {quote(record.id)}:", "", "| layer | op | target | us |"]
            lines += ["|---|---|---|---|"]
            lines += [
                f"| {quote(layer.get('name', ''))} | {quote(layer.get('op'))} | "
                f"{quote(layer.get('target'))} | {float(layer['time_us']):.0f} |"
                for layer in layers
            ]
            lines.append("")
    return lines
