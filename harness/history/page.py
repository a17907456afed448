"""The history page (``hil history --html DIR``): one self-contained HTML file, no scripts and
nothing fetched, like the report.

Per vendor, platform and SDK a bar chart of verdict counts run by run; the cases whose state changed
in the last ``RECENT`` nights with what changed; the flaky list; the latency of timed
(``--perf``) cases run by run. Each bar and point links to that run's ``report.html`` (its
results folder when ``hil report`` has not written one), relative to DIR.

The page is ``templates/history.html``, autoescaped; its links go through the ``href`` filter
(``harness.report.templating``): a stored link that is not http(s) or relative stays text.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import quote

from harness.history import FLAKY_FLIPS, FLAKY_RUNS, queries
from harness.history.store import Store
from harness.judge.verdict import KINDS, VERDICTS
from harness.report.matrix import case_href
from harness.report.templating import environment
from harness.results.records import CaseRecord
from harness.text import printable

PAGE_NAME = "history.html"
RECENT = 7  # nights: "changed recently"
# Bar colours: the report's verdict hues, strong enough to read as bars
COLOURS = {word: kind.colour for word, kind in KINDS.items()}
_BAR, _GAP, _HEIGHT = 14, 4, 120


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
    """The page (``templates/history.html``) of what the store holds, its links relative to
    ``folder``."""
    return (
        environment("harness.history")
        .get_template(PAGE_NAME)
        .render(
            store=store,
            nights=len({c.night for c in counts}),
            generated=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            legend=list(COLOURS.items()),
            colours=COLOURS,
            charts=_charts(counts, folder),
            height=_HEIGHT,
            bar_width=_BAR,
            recent=RECENT,
            changed=_recent(histories, folder),
            flaky=flaky,
            trends=[_trend(trend, folder) for trend in trends],
        )
    )


def _report_link(results: str, folder: Path, case: str = "") -> str:
    """A run's report relative to the page (its results folder without a report), or the
    card of a ``case`` there (``case_href``: relative to report.html)."""
    report = Path(results) / "report.html"
    if not report.is_file():
        return _relative(os.path.relpath(Path(results), folder.absolute()))
    page, _, anchor = case.partition("#")
    link = os.path.relpath(Path(results) / page if page else report, folder.absolute())
    return _relative(link, anchor)


def _relative(path: str, anchor: str = "") -> str:
    """A relative ``path`` as a link: percent-quoted and starting with ``./``, so that no
    folder name (``javascript:...``, ``a#b``, ``?``) reads as a scheme, a fragment or a
    query."""
    return "./" + quote(path) + (f"#{quote(anchor)}" if anchor else "")


@dataclass(frozen=True)
class _Rect:
    verdict: str
    y: float
    height: float
    colour: str


@dataclass(frozen=True)
class _Bar:
    x: int
    link: str
    tip: str
    rects: list[_Rect]
    label: str  # the night's date under every fifth bar, else ""


@dataclass(frozen=True)
class _Chart:
    vendor: str  # "": a row stored before runs named their vendor
    platform: str
    sdk: str
    width: int
    tallest: int
    bars: list[_Bar]


def _charts(counts: list[queries.NightCounts], folder: Path) -> list[_Chart]:
    """One bar chart per vendor, platform and SDK, a bar per run of verdicts stacked in
    VERDICTS order."""
    groups: dict[tuple[str, str, str], list[queries.NightCounts]] = defaultdict(list)
    for item in counts:
        groups[item.vendor, item.platform, item.sdk].append(item)
    return [_chart(*group, items, folder) for group, items in sorted(groups.items())]


def _chart(
    vendor: str, platform: str, sdk: str, items: list[queries.NightCounts], folder: Path
) -> _Chart:
    tallest = max(sum(item.counts.values()) for item in items)
    bars = []
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
            rects.append(_Rect(verdict, y, height, COLOURS[verdict]))
        tip = f"{item.started}: " + ", ".join(
            f"{v} {item.counts[v]}" for v in VERDICTS if v in item.counts
        )
        last = index == len(items) - 1
        labelled = index % 5 == 0 or (last and index % 5 >= 3)  # clear of the label before
        label = item.night[5:] if labelled else ""
        bars.append(_Bar(x, _report_link(item.results, folder), tip, rects, label))
    width = len(items) * (_BAR + _GAP) + 40
    return _Chart(vendor, platform, sdk, width, tallest, bars)


@dataclass(frozen=True)
class _Changed:
    case: str
    sdk: str
    was: str
    now: str
    link: str
    night: str
    what: str


def _recent(histories: list[queries.CaseHistory], folder: Path) -> list[_Changed]:
    """The cases whose state changed in the last ``RECENT`` nights, the latest first."""
    nights = sorted({night.night for h in histories for night in h.nights})
    recent = set(nights[-RECENT:])
    changed = [h for h in histories if h.previous is not None and h.since.night in recent]
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
        what = "; ".join(f"{c.what} {c.before} → {c.after}" for c in item.changes) or "nothing"
        link = _report_link(item.since.results, folder, case_href(record))
        rows.append(
            _Changed(
                item.case,
                item.since.sdk,
                item.previous.verdict,
                item.since.verdict,
                link,
                item.since.night,
                what,
            )
        )
    return rows


@dataclass(frozen=True)
class _Point:
    x: int
    y: float
    link: str
    started: str
    median: float


@dataclass(frozen=True)
class _Trend:
    case: str
    backend: str
    sdk: str
    low: float
    high: float
    width: int
    line: str
    points: list[_Point]


def _trend(trend: queries.Trend, folder: Path) -> _Trend:
    """A timed case's medians run by run as a line of linked points."""
    medians = [median for _, median, _ in trend.points]
    low, high = min(medians), max(medians)
    span = (high - low) or high or 1.0
    points = [
        _Point(
            10 + i * 24,
            50 - (median - low) / span * 40,
            _report_link(results, folder),
            started,
            median,
        )
        for i, (started, median, results) in enumerate(trend.points)
    ]
    line = " ".join(f"{point.x},{point.y:.1f}" for point in points)
    width = max(120, 24 * len(trend.points))
    return _Trend(trend.case, trend.backend, trend.sdk, low, high, width, line, points)
