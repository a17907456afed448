"""The data that flows from execution to verdicts, journal and reports.

``CaseRecord`` is the journal line written once a case has a verdict: plain data, so that
journal and reports can be tested without a toolkit or a board.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from harness.text import redacted

# Keys whose values identify or name something (cases, limits, files, boards, layers, tensors,
# the documents' text, releases), in records, probe records and run.json: never redacted, or a
# secret such as 8192 would rename case "...:h=8192" and its record would no longer match its
# folder, ``hil repro`` or ``--resume``. Free text (details, observations, logs) is redacted.
IDENTIFIERS = frozenset(
    {
        *("id", "platform", "op", "dtype", "limit", "value", "documented", "backend"),
        *("verdict", "artifacts", "started", "seed", "params", "deciding_limit"),
        *("not_isolable", "source", "sdk", "versions", "placement", "native", "known"),
        *("prop", "limits", "status", "used"),  # a record's checks and reference
        *("side", "subject", "stop", "case"),  # probe records and their steps
        *("sdks", "documents", "board", "address", "runtime", "text", "baseline"),  # run.json
        *("known_issues", "left_out", "selection", "command", "group", "kind"),
        "vendor",  # records and run.json
    }
)


def without_secrets(data: dict[str, Any]) -> dict[str, Any]:
    """A record's, probe record's or run.json's JSON with the run's secrets redacted from its
    free text, identifiers left whole (``IDENTIFIERS``)."""
    result: dict[str, Any] = redacted(data, IDENTIFIERS)
    return result


@dataclass
class CaseRecord:
    """One journal line: a case, where it ran, what was seen and the verdict."""

    id: str
    platform: str
    op: str
    dtype: str
    limit: str  # the catalogue limit id this case probes
    value: str  # the boundary value probed, as text (e.g. "8193", "kernel=8x8")
    documented: str  # "supported" or "outside"
    backend: str
    verdict: str
    detail: str = ""
    placement: list[dict[str, Any]] = field(default_factory=list)
    rewrites: list[str] = field(default_factory=list)
    native: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    tolerance: dict[str, float] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    source: dict[str, str] = field(default_factory=dict)  # seed, section, text
    artifacts: str = ""  # case folder relative to the results directory
    started: str = ""  # ISO 8601 UTC
    duration_s: float = 0.0
    seed: int = 0  # the recorded seed the inputs were drawn from
    params: dict[str, Any] = field(default_factory=dict)  # the model's resolved parameters
    # One entry per expectation of the case, {"prop", "limits", "documented", "observed",
    # "status"}; status is a verdict or "unobserved" (the backend cannot see the property).
    checks: list[dict[str, Any]] = field(default_factory=list)
    deciding_limit: str = ""  # the limit deciding ``documented`` (Case.deciding_limit)
    not_isolable: str = ""  # what else the parameters need, e.g. "needs kernel_h=8"
    # The host references: {"used": the one the comparison was decided against, "metrics":
    # reference -> the observed outputs against it, "agreement": other reference -> {"agrees",
    # "metrics" (against "used"), "worst" (the element they differ most at, both values)},
    # "unavailable": reference -> why it did not run}.
    reference: dict[str, Any] = field(default_factory=dict)
    # The known-issues entry the case matched (``--known-issues``): {"reference", "note",
    # "status": "as-expected" or "changed", "expected": the entry's verdict}; None: no entry.
    known: dict[str, Any] | None = None
    # The vendor SDK (toolkit) release the case ran with, e.g. "2.5.0"; part of the record's
    # identity, so that runs on several SDKs share a results directory ("" in journals
    # written before SDKs were told apart).
    sdk: str = ""
    # The vendor whose toolkit ran the case (``Vendor.name``), as the run's
    # run.json names it too: records of two vendors are never compared
    # (``harness.results.runs.check_same_vendor``). "" in journals written before vendors were
    # recorded: the vendor is unknown, never guessed.
    vendor: str = ""
    # Timing on a board (``--perf``; ``harness.targets.timing.timing_record``): "clock",
    # "runs", "min_s", "median_s", "p90_s", "mad_s", "samples_s", "conditions",
    # "clocks_changed", "layers"; or {"unavailable": why}. Against a baseline, "baseline": the
    # judgement (``harness.results.latency``). Empty: not timed.
    perf: dict[str, Any] = field(default_factory=dict)
    # Warnings raised while the case was prepared, run and judged ("RuntimeWarning: divide by
    # zero ..."), captured per case: pytest would blame whichever test started the batch.
    warnings: list[str] = field(default_factory=list)
    # A failure of a case the history store shows flapping in this configuration
    # (``harness.policy.flaky``): {"flips", "runs", "rate"} over its last stored runs.
    flaky: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The fields by name; the lists and dicts are the record's own (a journal line is
        written from a redacted copy, ``harness.text.redacted``)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CaseRecord:
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**known)


def flaky_text(flaky: dict[str, Any]) -> str:
    """A flaky mark (or a history store's flaky entry) in words."""
    return f"flipped {flaky['flips']} times in its last {flaky['runs']} runs ({flaky['rate']:.0%})"


def case_key(case_id: str, sdk: str) -> str:
    """A record's identity: the case on one SDK (``record_key`` of its record)."""
    return f"{case_id}@{sdk}" if sdk else case_id


def record_key(record: CaseRecord) -> str:
    """What tells records apart in one results directory: the case id and the SDK.

    The journal keeps the last record per key, ``--resume`` skips by key, and case folders and
    repro bundles are named by it, so runs on several SDKs never overwrite one another.
    """
    return case_key(record.id, record.sdk)


# In a case folder lost on a board: the board's kernel log since the case started
BOARD_LOG = "board-kernel.log"


def case_folder(case_id: str, sdk: str) -> str:
    """The case folder relative to the results directory, one per case and SDK."""
    return f"cases/{case_slug(case_key(case_id, sdk))}"


def case_slug(case_id: str) -> str:
    """A folder name for a case id (or a ``record_key``): readable, filesystem-safe, and unique
    by a short hash."""
    readable = re.sub(r"[^A-Za-z0-9._=-]+", "_", case_id).strip("_")[:80]
    return f"{readable}-{hashlib.sha1(case_id.encode()).hexdigest()[:8]}"
