"""Reports from a results directory: Markdown/HTML matrix, run-to-run diff, repro bundles."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from harness.report.baseline import baseline_changes
from harness.report.bundle import existing_bundles
from harness.report.causes import causes
from harness.report.html import render_html
from harness.report.markdown import render_markdown
from harness.report.matrix import build_report
from harness.report.sdk_matrix import DOCUMENTS_KEY, build_sdk_matrix
from harness.results.runs import read_run

REPORT_NAMES = ("report.md", "report.html")


def write_reports(
    results_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    aliases: Mapping[str, str] | None = None,
    *,
    output: str | os.PathLike[str] | None = None,
) -> list[Path]:
    """Write report.md and report.html of the run in ``results_dir`` (a results directory, or
    the directories of one run's shards, ``harness.results.runs``) into ``output`` (default:
    the one results directory); returns their paths. Links to repro bundles lead into the
    directory that holds each. ``aliases``: the vendors' layer renames
    (``harness.vendors.layer_aliases``)."""
    directories = [results_dir] if isinstance(results_dir, str | os.PathLike) else results_dir
    if output is None:
        if len(directories) != 1:
            raise ValueError("several results directories: name the report's folder (--output)")
        output = directories[0]
    run = read_run(directories)
    records, meta = run.records, run.meta
    bundles = {
        key: Path(os.path.relpath(part.directory, output), folder).as_posix()
        for part in run.parts
        for key, folder in existing_bundles(part.directory, part.records).items()
    }
    report = build_report(records, meta, bundles, baseline_changes(meta, records, aliases))
    matrix = build_sdk_matrix(records, str(meta.get(DOCUMENTS_KEY, "")), aliases)
    report = replace(
        report, probes=run.probes(), sdk_matrix=matrix, causes=causes(records, aliases, bundles)
    )
    Path(output).mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in zip(
        REPORT_NAMES, (render_markdown(report), render_html(report)), strict=True
    ):
        path = Path(output) / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
