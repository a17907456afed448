"""How a report writes and orders its cells: numbers, natural order and verdict counts, shared
by the matrix, the diff and the SDK matrix (which the matrix's report holds, so they cannot
import it)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from harness.judge.verdict import VERDICTS
from harness.results.records import CaseRecord


def verdict_counts(records: Iterable[CaseRecord]) -> dict[str, int]:
    """Cases per verdict, every verdict listed (zeros included) in VERDICTS order."""
    counts = Counter(record.verdict for record in records)
    return {verdict: counts[verdict] for verdict in VERDICTS}


def format_number(value: float) -> str:
    return f"{value:.6g}"


def natural_key(text: str) -> list[tuple[int, int | str]]:
    """Sort key putting "kernel=7x7" before "kernel=8x8" and "999" before "8193"."""
    return [
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part
    ]
