"""The history page (``hil history --html DIR``): one self-contained HTML file, no scripts and
nothing fetched, like the report.

Per vendor, platform and SDK a bar chart of verdict counts run by run; the cases whose state changed
in the last ``RECENT`` nights with what changed; the flaky list; the latency of timed
(``--perf``) cases run by run. Each bar and point links to that run's ``report.html`` (its
results folder when ``hil report`` has not written one), relative to DIR.
"""

from __future__ import annotations

import os
from collections import defaultdict
from datetime import datetime, timezone
from html import escape
from pathlib import Path
from urllib.parse import quote

from harness.history import FLAKY_FLIPS, FLAKY_RUNS, queries
from harness.history.store import Store
from harness.judge.verdict import VERDICTS
from harness.report.matrix import case_href
from harness.results.records import CaseRecord
from harness.text import printable

PAGE_NAME = "history.html"
RECENT = 7  # nights: "changed recently"
# Bar colours: the report's verdict hues, strong enough to read as bars
COLOURS = {
    "confirmed": "#2e9d4f",
    "limit-confirmed": "#2b8cbe",
    "limit-rewritten": "#5fa8d3",
    "doc-drift": "#e0a800",
    "doc-inconsistent": "#8d99a6",
    "untestable": "#b0b7bf",
    "rewritten-away": "#7f8c8d",
    "violation": "#d62839",
    "unrunnable": "#b5179e",
    "wrong-result": "#8b1e3f",
    "reference-disagreement": "#8e44ad",
    "infra-error": "#555555",
    "bad-input": "#6f42c1",
}
_BAR, _GAP, _HEIGHT = 14, 4, 120
_CSS = """
body { font-family: system-ui, sans-serif; margin: 1em 1.5em; color: #222; font-size: 14px; }
h1 { font-size: 1.4em; margin: 0 0 0.4em; }
h2 { font-size: 1.15em; margin: 1.2em 0 0.4em; }
h3 { font-size: 1em; margin: 0.9em 0 0.3em; }
table { border-collapse: collapse; margin: 0.3em 0 0.8em; }
th, td { border: 1px solid #bbb; padding: 2px 6px; vertical-align: top; text-align: left; }
th { background: #f0f0f0; font-weight: 600; }
td.n { text-align: right; }
.legend span { display: inline-block; margin-right: 1em; }
.legend i { display: inline-block; width: 0.9em; height: 0.9em; margin-right: 0.3em;
            vertical-align: -0.1em; }
svg { display: block; margin: 0.2em 0 0.6em; }
svg text { font-size: 10px; fill: #444; }
.muted { color: #666; }
"""


def write_page(
    store: Store,
    folder: Path,
    filters: queries.Filters,
    flips: int = FLAKY_FLIPS,
    runs: int = FLAKY_RUNS,
) -> Path:
    """Write ``DIR/history.html``; its path."""
    folder.mkdir(parents=True, exist_ok=True)
    page = folder / PAGE_NAME
    html = render_page(
        store.name,
        queries.night_counts(store, filters),
        queries.case_history(store, "*", filters),
        queries.flaky(store, filters, flips, runs),
        queries.latency_trends(store, filters),
        folder,
    )
    tmp = page.with_name(f".{PAGE_NAME}.{os.getpid()}.tmp")
    # stored text as a terminal shows it: no control characters, a lone surrogate as \xff
    tmp.write_text(printable(html), encoding="utf-8")
    os.replace(tmp, page)
    return page


def render_page(
    store: str,
    counts: list[queries.NightCounts],
    histories: list[queries.CaseHistory],
    flaky: list[queries.Flaky],
    trends: list[queries.Trend],
    folder: Path,
) -> str:
    generated = datetime.now(timezone.utc).isoformat(timespec="seconds")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>npu-hil history</title>',
        f"<style>{_CSS}</style></head><body>",
        "<h1>npu-hil history</h1>",
        f'<p class="muted">{escape(store)}: {len({c.night for c in counts})} nights; '
        f"written {escape(generated)}</p>",
        _charts(counts, folder),
        _recent(histories, folder),
        _flaky(flaky),
        _trends(trends, folder),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _report_link(results: str, folder: Path, case: str = "") -> str:
    """A run's report relative to the page (its results folder without a report), or the
    card of a ``case`` there (``case_href``: relative to report.html), as an href."""
    report = Path(results) / "report.html"
    if not report.is_file():
        return _href(os.path.relpath(Path(results), folder.absolute()))
    page, _, anchor = case.partition("#")
    link = os.path.relpath(Path(results) / page if page else report, folder.absolute())
    return _href(link, anchor)


def _href(path: str, anchor: str = "") -> str:
    """A relative ``path`` as an href attribute's text: percent-quoted and starting with
    ``./``, so that no folder name (``javascript:...``, ``a#b``, ``?``) reads as a scheme, a
    fragment or a query."""
    link = "./" + quote(path) + (f"#{quote(anchor)}" if anchor else "")
    return escape(link)


def _charts(counts: list[queries.NightCounts], folder: Path) -> str:
    parts = ['<h2 id="nights">Verdicts run by run</h2>']
    if not counts:
        return parts[0] + "<p>No runs stored.</p>"
    legend = "".join(
        f'<span><i style="background:{COLOURS[v]}"></i>{escape(v)}</span>' for v in VERDICTS
    )
    parts.append(f'<p class="legend">{legend}</p>')
    groups: dict[tuple[str, str, str], list[queries.NightCounts]] = defaultdict(list)
    for item in counts:
        groups[item.vendor, item.platform, item.sdk].append(item)
    for (vendor, platform, sdk), items in sorted(groups.items()):
        heading = f"{vendor or 'vendor unknown'}: {platform}, SDK {sdk or '-'}"
        parts.append(f"<h3>{escape(heading)}</h3>")
        parts.append(_bars(items, folder))
    return "\n".join(parts)


def _bars(items: list[queries.NightCounts], folder: Path) -> str:
    tallest = max(sum(item.counts.values()) for item in items)
    width = len(items) * (_BAR + _GAP) + 40
    shapes = [f'<text x="0" y="10">{tallest}</text>', f'<text x="0" y="{_HEIGHT}">0</text>']
    for index, item in enumerate(items):
        x = 30 + index * (_BAR + _GAP)
        y = float(_HEIGHT)
        rects = []
        for verdict in VERDICTS:
            count = item.counts.get(verdict, 0)
            if not count:
                continue
            height = count / tallest * (_HEIGHT - 10)
            y -= height
            rects.append(
                f'<rect class="bar v-{escape(verdict)}" x="{x}" y="{y:.1f}" width="{_BAR}" '
                f'height="{height:.1f}" fill="{COLOURS[verdict]}"/>'
            )
        tip = f"{item.started}: " + ", ".join(
            f"{v} {item.counts[v]}" for v in VERDICTS if v in item.counts
        )
        shapes.append(
            f'<a class="night" href="{_report_link(item.results, folder)}">'
            f"<title>{escape(tip)}</title>{''.join(rects)}</a>"
        )
        last = index == len(items) - 1
        if index % 5 == 0 or (last and index % 5 >= 3):  # a last label clear of the one before
            shapes.append(f'<text x="{x}" y="{_HEIGHT + 12}">{escape(item.night[5:])}</text>')
    return (
        f'<svg width="{width}" height="{_HEIGHT + 16}" role="img" '
        f'aria-label="verdict counts per run">{"".join(shapes)}</svg>'
    )


def _recent(histories: list[queries.CaseHistory], folder: Path) -> str:
    title = f'<h2 id="changed">Cases that changed in the last {RECENT} nights</h2>'
    nights = sorted({night.night for h in histories for night in h.nights})
    recent = set(nights[-RECENT:])
    changed = [h for h in histories if h.previous is not None and h.since.night in recent]
    if not changed:
        return title + "<p>None.</p>"
    changed.sort(key=lambda h: (h.since.started, h.case), reverse=True)
    rows = []
    for item in changed:
        assert item.previous is not None
        record = CaseRecord(
            id=item.case,
            platform=item.platform,
            op="",
            dtype="",
            limit="",
            value="",
            documented="",
            backend=item.since.backend,
            verdict=item.since.verdict,
            sdk=item.since.sdk,
        )
        link = _report_link(item.since.results, folder, case_href(record))
        what = "; ".join(f"{c.what} {c.before} → {c.after}" for c in item.changes) or "nothing"
        rows.append(
            f"<tr><td><code>{escape(item.case)}</code></td><td>{escape(item.since.sdk)}</td>"
            f"<td>{escape(item.previous.verdict)}</td><td>{escape(item.since.verdict)}</td>"
            f'<td><a href="{link}">{escape(item.since.night)}</a></td>'
            f"<td>{escape(what)}</td></tr>"
        )
    head = "<tr><th>case</th><th>SDK</th><th>was</th><th>now</th><th>since</th>"
    return title + f"<table>{head}<th>what changed that night</th></tr>{''.join(rows)}</table>"


def _flaky(flaky: list[queries.Flaky]) -> str:
    title = '<h2 id="flaky">Flaky cases</h2>'
    if not flaky:
        return title + "<p>None.</p>"
    rows = []
    for item in flaky:
        strip = "".join(
            f'<rect x="{i * 9}" y="0" width="8" height="12" fill="{COLOURS.get(v, "#999")}">'
            f"<title>{escape(night)}: {escape(v)}</title></rect>"
            for i, (v, night) in enumerate(zip(item.verdicts, item.nights, strict=True))
        )
        rows.append(
            f"<tr><td><code>{escape(item.case)}</code></td><td>{escape(item.sdk)}</td>"
            f"<td>{escape(item.backend)}</td><td class=n>{item.flips}/{item.runs - 1}</td>"
            f"<td class=n>{item.rate:.0%}</td>"
            f'<td><svg width="{9 * len(item.verdicts)}" height="12">{strip}</svg></td></tr>'
        )
    head = "<tr><th>case</th><th>SDK</th><th>backend</th><th>flips</th><th>flip rate</th>"
    return title + f"<table>{head}<th>runs, oldest first</th></tr>{''.join(rows)}</table>"


def _trends(trends: list[queries.Trend], folder: Path) -> str:
    title = '<h2 id="latency">Latency of timed cases (--perf), run by run</h2>'
    if not trends:
        return title + "<p>No timed runs stored.</p>"
    parts = [title]
    for trend in trends:
        medians = [median for _, median, _ in trend.points]
        low, high = min(medians), max(medians)
        span = (high - low) or high or 1.0
        width, height = max(120, 24 * len(trend.points)), 60

        def y(value: float, low: float = low, span: float = span) -> float:
            return 50 - (value - low) / span * 40

        coords = [(10 + i * 24, y(median)) for i, median in enumerate(medians)]
        line = " ".join(f"{x},{yy:.1f}" for x, yy in coords)
        dots = "".join(
            f'<a class="point" href="{_report_link(results, folder)}"><circle cx="{x}" '
            f'cy="{yy:.1f}" r="4" fill="#1a5fb4"><title>{escape(started)}: '
            f"{median * 1000:.3f} ms</title></circle></a>"
            for (x, yy), (started, median, results) in zip(coords, trend.points, strict=True)
        )
        parts.append(
            f"<h3><code>{escape(trend.case)}</code> {escape(trend.backend)}, SDK "
            f"{escape(trend.sdk or '-')}: {low * 1000:.3f} to {high * 1000:.3f} ms</h3>"
            f'<svg width="{width}" height="{height}"><polyline points="{line}" fill="none" '
            f'stroke="#1a5fb4"/>{dots}</svg>'
        )
    return "\n".join(parts)
