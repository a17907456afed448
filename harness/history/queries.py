"""What ``hil history`` and the nightly ask of the store.

Rows are fetched with plain filters and every answer is computed here, in Python, so SQLite
and PostgreSQL give the same answers (ordering, globbing and case sensitivity never depend on
the database's collation). Every answer is grouped by vendor first: no series, flip count,
bar, trend or baseline mixes the runs of two vendors.

- ``case_history``: the records of the cases a case id, a glob or a limit (id or glob)
  matches, one series per vendor, case, platform and SDK lane in time order, the first night of its
  current state and what changed between the run before and that night. The SDK lane is the
  SDK for runs on several SDKs (``--sdk A,B``: one series each) and one lane otherwise, so a
  nightly job that moves to a new SDK shows the move as that night's change.
- ``flaky``: cases whose verdict changed more than ``flips`` times over their last ``runs``
  records of one configuration (vendor, case, platform, SDK, backend), with the flip rate
  (changes / (records - 1)).
- ``last_run``: the latest run of a job configuration and vendor (``--baseline last``).
"""

from __future__ import annotations

import fnmatch
import itertools
import json
import re
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import Select, Text, and_, literal, or_, select

from harness.history import FLAKY_FLIPS, FLAKY_RUNS
from harness.history.runinfo import stored_vendor
from harness.history.schema import records, runs
from harness.history.store import Store
from harness.history.stored_text import MARK, stored
from harness.results.records import CaseRecord, flaky_text

GLOB = "*?["
_SHARD = re.compile(r" shard=\S+")  # a configuration's shard: one job's shards, one night

_COLUMNS = (
    records.c.vendor,
    records.c.case_id,
    records.c.sdk,
    records.c.platform,
    records.c.limit_id,
    records.c.backend,
    records.c.verdict,
    records.c.known,
    records.c.started,
    records.c.definition,
    records.c.versions,
    records.c.median_s,
    records.c.artifacts,
    runs.c.uid.label("run"),
    runs.c.started.label("run_started"),
    runs.c.night,
    runs.c.host,
    runs.c.revision,
    runs.c.sdks,
    runs.c.results,
)


@dataclass(frozen=True)
class Filters:
    since: str | None = None  # a date or ISO time: runs started then or later
    platform: str | None = None
    board: str | None = None  # the records' backend: a board's name, or "simulator"
    sdk: str | None = None


@dataclass(frozen=True)
class Night:
    """A case's record in one run."""

    night: str
    started: str  # the run's start
    run: str
    verdict: str
    sdk: str
    backend: str
    revision: str
    host: str
    definition: str
    versions: dict[str, str]
    results: str  # the run's results folder
    artifacts: str
    median_s: float | None
    known: str


@dataclass(frozen=True)
class Change:
    what: str
    before: str
    after: str


@dataclass(frozen=True)
class CaseHistory:
    vendor: str  # "": unknown (a run written before runs recorded theirs)
    case: str
    platform: str
    lane: str  # the SDK of a several-SDK run's series; "" for single-SDK runs
    nights: list[Night]
    since: Night  # the first run of the current state
    runs_in_state: int
    previous: Night | None  # the run before ``since``; None: the state held from the start
    changes: list[Change] = field(default_factory=list)  # what differs from ``previous``

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Flaky:
    vendor: str
    case: str
    platform: str
    sdk: str
    backend: str
    flips: int
    runs: int
    rate: float
    verdicts: list[str]  # oldest first
    nights: list[str]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        return flaky_text(self.to_json())

    def mark(self) -> dict[str, Any]:
        """The record's ``flaky`` mark."""
        return {"flips": self.flips, "runs": self.runs, "rate": self.rate}


def case_history(store: Store, pattern: str, filters: Filters) -> list[CaseHistory]:
    """The history of every case that ``pattern`` (case id, limit id, or a glob of either)
    matches, sorted by case, platform and lane. An id is an id first: one holding brackets
    (``[b,c,1,w]:h=8193``) names its own case, and is read as a glob only when no stored case
    or limit has it as its id."""
    query = _filtered(select(*_COLUMNS).join(runs, runs.c.id == records.c.run_id), filters)
    if any(char in pattern for char in GLOB):
        query = query.where(
            or_(_starting(records.c.case_id, pattern), _starting(records.c.limit_id, pattern))
        )
    else:
        query = query.where(or_(records.c.case_id == pattern, records.c.limit_id == pattern))
    with store.reading() as connection:
        rows = [row._asdict() for row in connection.execute(query)]
    exact = [row for row in rows if pattern in (row["case_id"], row["limit_id"])]
    rows = exact or [row for row in rows if _matches(pattern, row)]
    series: dict[tuple[str, str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        lane = row["sdk"] if "," in row["sdks"] else ""
        series[row["vendor"], row["case_id"], row["platform"], lane].append(row)
    return [_history(key, entries) for key, entries in sorted(series.items())]


def flaky(
    store: Store, filters: Filters, flips: int = FLAKY_FLIPS, last: int = FLAKY_RUNS
) -> list[Flaky]:
    """The flaky cases, highest flip rate first, then by case."""
    columns = (
        records.c.vendor,
        records.c.case_id,
        records.c.platform,
        records.c.sdk,
        records.c.backend,
        records.c.verdict,
        runs.c.started,
        runs.c.uid,
        runs.c.night,
    )
    query = _filtered(select(*columns).join(runs, runs.c.id == records.c.run_id), filters)
    with store.reading() as connection:
        rows = list(connection.execute(query))
    groups: dict[tuple[str, str, str, str, str], list[Any]] = defaultdict(list)
    for row in rows:
        groups[row.vendor, row.case_id, row.platform, row.sdk, row.backend].append(row)
    found = []
    for key, entries in groups.items():
        entries.sort(key=lambda row: (row.started, row.uid))
        item = _flaky(key, entries[-last:])
        if item.flips > flips:
            found.append(item)
    return sorted(found, key=lambda item: (-item.rate, item.case, item.platform, item.sdk))


def flip_record(store: Store, record: CaseRecord, last: int = FLAKY_RUNS) -> Flaky | None:
    """``record``'s configuration (its vendor, case, platform, SDK and backend) over its last
    ``last`` stored runs; None: never stored."""
    key = (
        stored_vendor(record, store.platform_vendors),
        record.id,
        record.platform,
        record.sdk,
        record.backend,
    )
    query = (
        select(records.c.verdict, runs.c.started, runs.c.uid, runs.c.night)
        .join(runs, runs.c.id == records.c.run_id)
        .where(records.c.vendor == key[0])
        .where(records.c.case_id == key[1])
        .where(records.c.platform == key[2])
        .where(records.c.sdk == key[3])
        .where(records.c.backend == key[4])
    )
    with store.reading() as connection:
        rows = sorted(connection.execute(query), key=lambda row: (row.started, row.uid))
    return _flaky(key, rows[-last:]) if rows else None


@dataclass(frozen=True)
class StoredRun:
    uid: str
    started: str
    results: str
    latest: dict[str, tuple[str, dict[str, Any]]]  # record_key -> (verdict, perf)


def last_run(store: Store, configuration: str, vendor: str, other_than: str) -> StoredRun | None:
    """The latest stored run of ``configuration`` and ``vendor`` other than run
    ``other_than``, with its records as a baseline reads them; None: no such run."""
    from harness.results.records import case_key

    with store.reading() as connection:
        candidates = connection.execute(
            select(runs.c.id, runs.c.uid, runs.c.started, runs.c.results)
            .where(runs.c.configuration == configuration)
            .where(runs.c.vendor == vendor)
            .where(runs.c.uid != other_than)
        ).all()
        if not candidates:
            return None
        run = max(candidates, key=lambda row: (row.started, row.uid))
        rows = connection.execute(
            select(records.c.case_id, records.c.sdk, records.c.verdict, records.c.perf).where(
                records.c.run_id == run.id
            )
        )
        latest = {
            case_key(row.case_id, row.sdk): (row.verdict, json.loads(row.perf) if row.perf else {})
            for row in rows
        }
    return StoredRun(run.uid, run.started, run.results, latest)


@dataclass(frozen=True)
class NightCounts:
    """One night's verdict counts for one vendor, platform, SDK and job, its shards summed
    (the history page's bars); ``started``, ``run`` and ``results``: its first shard's."""

    vendor: str
    platform: str
    sdk: str
    night: str
    started: str
    run: str
    results: str
    counts: dict[str, int]


def night_counts(store: Store, filters: Filters) -> list[NightCounts]:
    """Verdict counts per vendor, platform, SDK, night and job: the shards of one night's job
    are one bar (linked to the first shard's folder), another job the same night another."""
    columns = (
        records.c.vendor,
        records.c.platform,
        records.c.sdk,
        records.c.verdict,
        runs.c.uid,
        runs.c.started,
        runs.c.night,
        runs.c.results,
        runs.c.configuration,
    )
    query = _filtered(select(*columns).join(runs, runs.c.id == records.c.run_id), filters)
    with store.reading() as connection:
        rows = list(connection.execute(query))
    counts: dict[tuple[str, str, str, str, str], Counter[str]] = defaultdict(Counter)
    first: dict[tuple[str, str, str, str, str], tuple[str, str, str]] = {}
    for row in rows:
        key = (row.vendor, row.platform, row.sdk, row.night, _SHARD.sub("", row.configuration))
        counts[key][row.verdict] += 1
        first[key] = min(first.get(key, (row.started, row.uid, row.results)),
                         (row.started, row.uid, row.results))  # fmt: skip
    found = [NightCounts(*key[:4], *first[key], dict(counter)) for key, counter in counts.items()]
    return sorted(
        found, key=lambda item: (item.vendor, item.platform, item.sdk, item.started, item.run)
    )


@dataclass(frozen=True)
class Trend:
    """A timed case's median latency run by run (``--perf`` runs)."""

    vendor: str
    case: str
    platform: str
    sdk: str
    backend: str
    points: list[tuple[str, float, str]]  # (run start, median seconds, results folder)


def latency_trends(store: Store, filters: Filters) -> list[Trend]:
    columns = (
        records.c.vendor,
        records.c.case_id,
        records.c.platform,
        records.c.sdk,
        records.c.backend,
        records.c.median_s,
        runs.c.started,
        runs.c.uid,
        runs.c.results,
    )
    query = _filtered(
        select(*columns)
        .join(runs, runs.c.id == records.c.run_id)
        .where(records.c.median_s.is_not(None)),
        filters,
    )
    with store.reading() as connection:
        rows = list(connection.execute(query))
    groups: dict[tuple[str, str, str, str, str], list[Any]] = defaultdict(list)
    for row in rows:
        groups[row.vendor, row.case_id, row.platform, row.sdk, row.backend].append(row)
    return [
        Trend(
            *key,
            [
                (row.started, float(row.median_s), row.results)
                for row in sorted(entries, key=lambda row: (row.started, row.uid))
            ],
        )
        for key, entries in sorted(groups.items())
    ]


def _filtered(query: Select[Any], filters: Filters) -> Select[Any]:
    conditions = []
    if filters.since:
        conditions.append(runs.c.started >= filters.since)
    if filters.platform:
        conditions.append(records.c.platform == filters.platform)
    if filters.board:
        conditions.append(records.c.backend == filters.board)
    if filters.sdk:
        conditions.append(records.c.sdk == filters.sdk)
    return query.where(and_(*conditions)) if conditions else query


def _starting(column: Any, pattern: str) -> Any:
    """A condition narrowing ``column`` to the values starting with the text before the glob's
    first wildcard, and to the values ``stored_text`` escaped (the exact match is
    ``fnmatch``'s; SQLite's LIKE also ignores case, so it only narrows)."""
    head = pattern[: min(pattern.find(char) % (len(pattern) + 1) for char in GLOB)]
    if stored(head) != head:  # a NUL or a surrogate: only the escaped values can match
        return column.like(literal(MARK + "%", Text))
    escaped = head.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    prefixes = (literal(escaped + "%", Text), literal(MARK + "%", Text))
    return or_(*(column.like(prefix, escape="\\") for prefix in prefixes))


def _matches(pattern: str, row: dict[str, Any]) -> bool:
    return any(fnmatch.fnmatchcase(row[name], pattern) for name in ("case_id", "limit_id"))


def _night(row: dict[str, Any]) -> Night:
    return Night(
        night=row["night"],
        started=row["run_started"],
        run=row["run"],
        verdict=row["verdict"],
        sdk=row["sdk"],
        backend=row["backend"],
        revision=row["revision"],
        host=row["host"],
        definition=row["definition"],
        versions=json.loads(row["versions"]),
        results=row["results"],
        artifacts=row["artifacts"],
        median_s=row["median_s"],
        known=row["known"],
    )


def _history(key: tuple[str, str, str, str], rows: list[dict[str, Any]]) -> CaseHistory:
    nights = [_night(row) for row in sorted(rows, key=lambda row: (row["run_started"], row["run"]))]
    start = len(nights) - 1
    while start > 0 and nights[start - 1].verdict == nights[-1].verdict:
        start -= 1
    previous = nights[start - 1] if start else None
    since = nights[start]
    changes = _changes(previous, since) if previous else []
    return CaseHistory(*key, nights, since, len(nights) - start, previous, changes)


def _changes(before: Night, after: Night) -> list[Change]:
    """What differs between two runs of a case: SDK, backend (board), harness revision, host,
    the case's own definition, then every version (toolkit, runtime, driver, host tools)."""
    fields = [
        ("SDK", before.sdk, after.sdk),
        ("backend", before.backend, after.backend),
        ("harness revision", before.revision, after.revision),
        ("case definition", before.definition, after.definition),
    ]
    if before.host and after.host:  # imported runs do not know their host
        fields.append(("host", before.host, after.host))
    names = sorted(set(before.versions) | set(after.versions))
    fields += [
        (name, before.versions.get(name, "-"), after.versions.get(name, "-")) for name in names
    ]
    return [Change(what, old, new) for what, old, new in fields if old != new]


def _flaky(key: tuple[str, str, str, str, str], rows: list[Any]) -> Flaky:
    verdicts = [row.verdict for row in rows]
    flips = sum(1 for old, new in itertools.pairwise(verdicts) if old != new)
    rate = flips / (len(verdicts) - 1) if len(verdicts) > 1 else 0.0
    return Flaky(*key, flips, len(verdicts), round(rate, 4), verdicts, [row.night for row in rows])
