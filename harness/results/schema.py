"""The one schema of journal records and ``run.json``, checked whenever either is read.

Reports, diffs and bundles index into records without further checks, so anything they read
is typed here: a line or run.json that does not fit is refused by ``harness.results.journal``
with the file, the line and the field (e.g. ``checks[0].limits``). Fields not listed are
allowed (an older reader meets a newer writer) and ignored.
"""

from __future__ import annotations

import reprlib
from dataclasses import MISSING, fields
from typing import Any

import jsonschema

from harness.judge.verdict import VERDICTS
from harness.names import closest, suggestion
from harness.results.fast_schema import compile_check
from harness.results.records import CaseRecord

_STRING = {"type": "string"}
# ``--shard I/N``: at most this many parts (a CI matrix of a thousand jobs is already far
# beyond any runner pool); a count read from run.json is bounded so ``hil report`` cannot be
# made to list millions of missing shards.
MAX_SHARDS = 1000
_NUMBER = {"type": "number"}
_STRINGS = {"type": "array", "items": _STRING}
_OBJECTS = {"type": "array", "items": {"type": "object"}}


def _mapping(values: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": values}


def _record(required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "required": required, "properties": properties}


_REQUIRED = [
    spec.name
    for spec in fields(CaseRecord)
    if spec.default is MISSING and spec.default_factory is MISSING
]


def _documented_group(titles: list[str]) -> dict[str, Any]:
    """A group of documented rows in run.json, with ``titles`` (texts) required."""
    return _record(
        [*titles, "group", "targets", "rows"],
        {
            **{title: _STRING for title in titles},
            "group": _STRING,
            "targets": _STRINGS,
            "rows": {
                "type": "array",
                "items": _record(
                    ["limit", "kind", "text"],
                    {"limit": _STRING, "kind": _STRING, "text": _STRING},
                ),
            },
        },
    )


_CHECK = _record(
    ["prop", "limits", "documented", "observed", "status"],
    {
        "prop": _STRING,
        "limits": _STRINGS,
        "documented": _STRING,
        "observed": _STRING,
        "status": _STRING,
    },
)
_AGREEMENT = _record(
    [],
    {"agrees": {"type": "boolean"}, "metrics": _mapping(_NUMBER), "worst": {"type": "object"}},
)

RECORD_SCHEMA: dict[str, Any] = _record(
    _REQUIRED,
    {
        **{name: _STRING for name in _REQUIRED},
        "verdict": {"enum": list(VERDICTS)},
        "detail": _STRING,
        "placement": _OBJECTS,
        "rewrites": _STRINGS,
        "warnings": _STRINGS,
        "native": _OBJECTS,
        "metrics": _mapping(_NUMBER),
        "tolerance": _mapping(_NUMBER),
        "versions": _mapping(_STRING),
        "source": _mapping(_STRING),
        "artifacts": _STRING,
        "started": _STRING,
        "duration_s": _NUMBER,
        "seed": {"type": "integer"},
        "params": {"type": "object"},
        "checks": {"type": "array", "items": _CHECK},
        "deciding_limit": _STRING,
        "not_isolable": _STRING,
        "vendor": _STRING,
        # a folder name under cases/ and bundles/: no separators, no "." or ".."
        "sdk": {"type": "string", "pattern": "^([A-Za-z0-9][A-Za-z0-9._+-]*)?$"},
        "reference": _record(
            [],
            {
                "used": _STRING,
                "metrics": _mapping(_mapping(_NUMBER)),
                "agreement": _mapping(_AGREEMENT),
                "unavailable": _mapping(_STRING),
            },
        ),
        "perf": _record(
            [],
            {
                "unavailable": _STRING,
                "clock": _STRING,
                "runs": {"type": "integer"},
                "warmup": {"type": "integer"},
                **{name: _NUMBER for name in ("min_s", "median_s", "p90_s", "mad_s")},
                "samples_s": {"type": "array", "items": _NUMBER},
                "clocks_changed": _STRINGS,
                "conditions": _mapping(_mapping(_STRING)),
                "layers": _OBJECTS,
                "baseline": {"type": "object"},
            },
        ),
        "flaky": {
            "anyOf": [
                {"type": "null"},
                _record(
                    ["flips", "runs", "rate"],
                    {"flips": {"type": "integer"}, "runs": {"type": "integer"}, "rate": _NUMBER},
                ),
            ]
        },
        "known": {
            "anyOf": [
                {"type": "null"},
                _record(
                    ["reference", "note", "status", "expected"],
                    {
                        "reference": _STRING,
                        "note": _STRING,
                        "status": {"enum": ["as-expected", "changed"]},
                        "expected": {"enum": list(VERDICTS)},
                    },
                ),
            ]
        },
    },
)

# The entries reports interpret; the others are listed as they are.
RUN_SCHEMA: dict[str, Any] = _record(
    [],
    {
        "unprobed": {
            "type": "array",
            "items": _record(
                ["limit", "reason"],
                {
                    "limit": _STRING,
                    "reason": _STRING,
                },
            ),
        },
        "tier": {"enum": ["default", "full"]},
        # the run's vendor (``Vendor.name``); absent in runs written before it was recorded
        "vendor": _STRING,
        # configured boards down at the start (``harness.report.matrix.BOARD_DOWN_KEY``)
        "board_down": {
            "type": "array",
            "items": _record(
                ["board", "status", "problem", "cases"],
                {
                    **{name: _STRING for name in ("board", "address", "status", "problem")},
                    "cases": {"enum": ["simulator", "not run"]},
                },
            ),
        },
        "baseline": {"type": ["string", "null"]},
        "known_issues": {"type": ["string", "null"]},
        # what the history store reads of a run (``harness.history.importing.run_entry``)
        "sdks": _STRINGS,
        "versions": {"type": "object"},
        "history": _record([], {name: _STRING for name in ("run", "revision", "configuration")}),
        # models of --models that are not cases (not runnable, not selected)
        "models_not_run": {
            "type": "array",
            "items": _record(["model", "reason"], {"model": _STRING, "reason": _STRING}),
        },
        # this run's part of the selected cases (``--shard I/N``): which one, how many cases,
        # and a digest of the whole selection, the same in every shard of one run
        "shard": _record(
            ["index", "count", "selection", "cases"],
            {
                "index": {"type": "integer", "minimum": 1},
                "count": {"type": "integer", "minimum": 1, "maximum": MAX_SHARDS},
                "selection": _STRING,
                "cases": {"type": "integer", "minimum": 0},
            },
        ),
        # the case keys the run selected, and its exit status once it ended
        # (``harness.report.cut_short``)
        "selected": _STRINGS,
        "ended": _record(["exit"], {"exit": {"type": "integer"}}),
        # slow-tier cases the run left out (``--tier default``)
        "left_out": {
            "type": "array",
            "items": _record(["id", "reason"], {"id": _STRING, "reason": _STRING}),
        },
        # a vendor's documented rows per platform group, titled (older runs: "model_io",
        # the same groups untitled)
        "documented_rows": {"type": "array", "items": _documented_group(["title", "document"])},
        "model_io": {"type": "array", "items": _documented_group([])},
        # runs added to this folder with --append, each described as its own run.json would
        "appended": _OBJECTS,
    },
)

# A line of probes.jsonl (``harness.results.probes.ProbeRecord``); why a search ended: the
# search's own stops, or not attempted at all.
PROBE_STOPS = ("found", "budget", "cap", "floor", "infra", "skipped")
_INTEGER_OR_NULL = {"anyOf": [{"type": "integer"}, {"type": "null"}]}
_PROBE_TEXTS = ("id", "platform", "op", "limit", "dtype", "subject", "documented")
PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [*_PROBE_TEXTS, "side", "edge", "stop"],
    "properties": {
        **{name: _STRING for name in _PROBE_TEXTS},
        **{name: _STRING for name in ("stop_detail", "backend", "before", "after")},
        "side": {"enum": ["upper", "lower"]},
        "edge": {"type": "integer"},
        "stop": {"enum": list(PROBE_STOPS)},
        "budget": {"type": "integer"},
        "last_good": _INTEGER_OR_NULL,
        "first_bad": _INTEGER_OR_NULL,
        "versions": {"type": "object", "additionalProperties": _STRING},
        "steps": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["value", "case", "behaved", "behaviour", "verdict"],
                "additionalProperties": False,
                "properties": {
                    "value": {"type": "integer"},
                    "case": _STRING,
                    "behaved": {"anyOf": [{"type": "boolean"}, {"type": "null"}]},
                    "behaviour": _STRING,
                    "verdict": _STRING,
                },
            },
        },
    },
}

_VALIDATORS = {
    id(schema): jsonschema.Draft202012Validator(schema)
    for schema in (RECORD_SCHEMA, RUN_SCHEMA, PROBE_SCHEMA)
}
# A record that fits needs no more than this; only a misfit is walked by jsonschema.
_FITS = {id(schema): compile_check(schema) for schema in (RECORD_SCHEMA, RUN_SCHEMA, PROBE_SCHEMA)}
_SHOWN = 120  # characters of an offending value quoted in a message
# repr of an offending value, built no larger than needed (a field may hold megabytes)
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = _SHOWN
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict = 2, 4, 4


def schema_problem(data: Any, schema: dict[str, Any]) -> str | None:
    """Why ``data`` does not fit ``schema`` (RECORD_SCHEMA, RUN_SCHEMA or another JSON Schema),
    naming the first field at fault; None when it fits."""
    fits = _FITS.get(id(schema))
    if fits is not None and fits(data):
        return None
    validator = _VALIDATORS.get(id(schema)) or jsonschema.Draft202012Validator(schema)
    error = next(validator.iter_errors(data), None)
    if error is None:
        return None
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error.path)
    field = where.lstrip(".")
    shown = _REPR.repr(error.instance)  # built bounded: the value may be huge
    shown = shown if len(shown) <= _SHOWN else shown[:_SHOWN] + "..."
    if error.validator == "type":
        types = error.validator_value
        wanted = " or ".join(_ARTICLES[t] for t in ([types] if isinstance(types, str) else types))
        if not field:
            return f"expected {wanted}, got {type(error.instance).__name__}"
        return f"field {field!r} must be {wanted}, got {shown}"
    if error.validator == "required":
        missing = [name for name in error.validator_value if name not in error.instance]
        inside = f" in {field!r}" if field else ""
        strays = [key for key in error.instance if key not in error.schema.get("properties", {})]
        near = [_bounded(key) for key in strays if closest(str(key), missing)][:3]
        typo = f" ({', '.join(near)} is not a field: a misspelling?)" if near else ""
        return f"missing field(s) {', '.join(missing)}{inside}{typo}"
    named = f"field {field!r}" if field else "the file"
    if error.validator == "enum":
        choices = [str(choice) for choice in error.validator_value]
        hint = suggestion(str(error.instance), choices)
        return f"{named} has unknown value {shown}{hint} (one of {', '.join(choices)})"
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = list(error.schema.get("properties", {}))
        unknown = [key for key in error.instance if key not in known]
        if unknown and known:  # a mapping of free names has no "unknown" key
            hints = [f"{_bounded(key)}{suggestion(str(key), known)}" for key in unknown[:3]]
            return f"{named}: unknown field {', '.join(hints)} (known: {', '.join(known)})"
    if error.validator in ("minItems", "minLength", "minProperties") and not error.instance:
        return f"{named} must not be empty"
    message = error.message if len(error.message) <= _SHOWN else error.message[:_SHOWN] + "..."
    return f"field {field!r}: {message}"


def _bounded(value: object) -> str:
    """A value quoted for a message, at most ``_SHOWN`` characters of it."""
    shown = _REPR.repr(value)
    return shown if len(shown) <= _SHOWN else shown[:_SHOWN] + "..."


_ARTICLES = {
    "object": "a JSON object",
    "array": "an array",
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "a boolean",
    "null": "null",
}
