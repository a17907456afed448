"""Reports from a results directory: Markdown/HTML matrix, run-to-run diff, repro bundles."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from harness.report.baseline import baseline_changes
from harness.report.bundle import existing_bundles
from harness.report.causes import causes
from harness.report.html import render_case_pages, render_html
from harness.report.markdown import render_markdown
from harness.report.matrix import CASE_PAGES, build_report
from harness.report.sdk_matrix import DOCUMENTS_KEY, build_sdk_matrix
from harness.results.runs import read_run

REPORT_NAMES = ("report.md", "report.html")


def write_reports(
    results_dir: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    aliases: Mapping[str, str] | None = None,
    *,
    output: str | os.PathLike[str] | None = None,
) -> list[Path]:
    """Write report.md and report.html (and report.html's case pages, ``report-cases/``) of
    the run in ``results_dir`` (a results directory, or the directories of one run's shards,
    ``harness.results.runs``) into ``output`` (default: the one results directory); returns
    the paths of the two reports. Links to repro bundles lead into the
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
    _write_case_pages(Path(output), render_case_pages(report))
    return written


def _write_case_pages(output: Path, pages: Mapping[str, str]) -> None:
    """report.html's case pages, replacing an earlier report's (whose sections may differ)."""
    folder = output / CASE_PAGES
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder)
    folder.mkdir()
    for name, text in pages.items():
        (output / name).write_text(text, encoding="utf-8")
