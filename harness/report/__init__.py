"""Reports from a results directory: Markdown/HTML matrix, run-to-run diff, repro bundles."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from harness.report.baseline import baseline_changes
from harness.report.bundle import existing_bundles
from harness.report.html import render_html
from harness.report.markdown import render_markdown
from harness.report.matrix import build_report
from harness.report.sdk_matrix import DOCUMENTS_KEY, build_sdk_matrix
from harness.results.journal import read_records, read_run_metadata
from harness.results.probes import read_probes

REPORT_NAMES = ("report.md", "report.html")


def write_reports(
    results_dir: str | os.PathLike[str], aliases: Mapping[str, str] | None = None
) -> list[Path]:
    """Write report.md and report.html into ``results_dir``; returns their paths.
    ``aliases``: the vendors' layer renames (``harness.vendors.layer_aliases``)."""
    records = read_records(results_dir)
    meta = read_run_metadata(results_dir)
    changes = baseline_changes(meta, records, aliases)
    report = build_report(records, meta, existing_bundles(results_dir, records), changes)
    matrix = build_sdk_matrix(records, str(meta.get(DOCUMENTS_KEY, "")), aliases)
    report = replace(report, probes=read_probes(results_dir), sdk_matrix=matrix)
    written = []
    for name, text in zip(
        REPORT_NAMES, (render_markdown(report), render_html(report)), strict=True
    ):
        path = Path(results_dir) / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
