"""``hil report`` and ``hil diff`` on real results directories, through the argparse handlers."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest
from tests.helpers import paths
from tests.helpers.cli import hil
from tests.helpers.records import HOSTILE_ID, _records, make_record

from harness.judge.verdict import FAILING_VERDICTS
from harness.report.baseline import baseline_changes
from harness.report.html import render_case_pages, render_html
from harness.report.markdown import md_escape, render_markdown
from harness.report.matrix import CASE_PAGES, SHORT, build_report
from harness.results.journal import JOURNAL_NAME, Journal, write_run_metadata
from harness.results.records import CaseRecord, case_slug


@pytest.fixture
def results(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    journal = Journal(folder)
    for record in _records():
        journal.append(record)
    write_run_metadata(folder, {"backend": "auto", "versions": {"rknn-toolkit2": "2.5.0-run"}})
    return folder


class _ReportParser(HTMLParser):
    """Collects tags, attributes, and each case cell with the section heading it sits under."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        # (section heading, verdict, the cell's text chunks: one per element's text)
        self.cases: list[tuple[str, str, list[str]]] = []
        self.text = ""
        self._heading: str | None = None
        self._group = False
        self._section = ""
        self._case: tuple[str, str, list[str]] | None = None
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += attrs
        classes = (dict(attrs).get("class") or "").split()
        if tag == "details" and "group" in classes:
            self._group = True
        if tag == "summary" and self._group:  # "<op> on <platform>/<backend>: <counts>"
            self._heading, self._group = "", False
        if tag == "div" and self._case is not None:
            self._depth += 1
        elif tag == "div" and "case" in classes:
            verdicts = [name[2:] for name in classes if name.startswith("v-")]
            self._case, self._depth = (self._section, verdicts[0], []), 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "summary" and self._heading is not None:
            self._section, self._heading = self._heading, None
        if tag == "div" and self._case is not None:
            self._depth -= 1
            if self._depth == 0:
                self.cases.append(self._case)
                self._case = None

    def handle_data(self, data: str) -> None:
        self.text += data
        if self._heading is not None:
            self._heading += data
        if self._case is not None:
            self._case[2].append(data)


def _parse_html(path: Path) -> _ReportParser:
    parser = _ReportParser()
    parser.feed(path.read_text(encoding="utf-8"))
    parser.close()
    return parser


def test_report_writes_both_files_and_prints_their_paths(
    results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert hil(["report", str(results)]) == 0
    printed = capsys.readouterr().out.split()
    assert printed == [str(results / "report.md"), str(results / "report.html")]
    assert all(Path(path).stat().st_size > 0 for path in printed)


def _parse_case_pages(results: Path) -> _ReportParser:
    """report.html's case pages, one per section, read as one."""
    parser = _ReportParser()
    for page in sorted((results / CASE_PAGES).glob("*.html")):
        parser.feed(page.read_text(encoding="utf-8"))
    parser.close()
    return parser


def test_html_report_has_a_cell_per_case_in_its_backend_section(results: Path) -> None:
    hil(["report", str(results)])
    assert _parse_html(results / "report.html").cases == []  # the cards are a link away
    parsed = _parse_case_pages(results)
    records = _records()
    assert len(parsed.cases) == len(records)
    assert Counter(verdict for _, verdict, _ in parsed.cases) == Counter(
        record.verdict for record in records
    )
    for record in records:
        matching = [
            chunks
            for section, verdict, chunks in parsed.cases
            if section.startswith(f"{record.op} on {record.platform}/{record.backend}: ")
            and verdict == record.verdict
            and f"id: {record.id}" in chunks
        ]
        assert len(matching) == 1, record.id
        assert record.value in matching[0]
    pow_cell = next(chunks for _, _, chunks in parsed.cases if "id: pow-4" in chunks)
    assert "placement: Pow: CPU" in pow_cell
    assert not any("InputOperator" in chunk for chunk in pow_cell)


def test_html_report_is_self_contained_and_escapes_record_text(results: Path) -> None:
    hil(["report", str(results)])
    html_text = (results / "report.html").read_text(encoding="utf-8")
    parsed = _parse_html(results / "report.html")
    assert not {"script", "link", "img", "iframe", "object", "embed"} & set(parsed.tags)
    assert parsed.tags.count("style") == 1
    names = {name for name, _ in parsed.attrs}
    assert "src" not in names
    assert not any(name.startswith("on") for name in names)
    for name, value in parsed.attrs:
        if name == "href":
            assert value and "//" not in value and ":" not in value, value
    assert "<script" not in html_text and "<img" not in html_text
    assert HOSTILE_ID in parsed.text  # shown, as text
    assert "a | b <img src=x onerror=alert(1)>" in parsed.text
    for page in (results / CASE_PAGES).glob("*.html"):  # the case pages, likewise
        cards = _parse_html(page)
        assert not {"script", "link", "img", "iframe", "object", "embed"} & set(cards.tags)
        assert not any(name == "src" or name.startswith("on") for name, _ in cards.attrs)
        assert "<script" not in page.read_text(encoding="utf-8")


def test_html_report_shows_run_metadata(results: Path) -> None:
    hil(["report", str(results)])
    text = _parse_html(results / "report.html").text
    assert "rknn-toolkit2 2.5.0/2.5.0-run" in text  # from the records and run.json
    assert "rock-5b, simulator" in text  # backends seen in the records
    assert "rk3562, rk3588" in text


def _markdown_table(markdown: str, heading: str) -> list[list[str]]:
    """Rows of the first table after ``heading``; escaped pipes stay inside their cell."""
    lines = markdown.split(f"\n{heading}\n", 1)[1].split("\n")
    table = []
    for line in lines[lines.index(next(x for x in lines if x.startswith("|"))) :]:
        if not line.startswith("|"):
            break
        table.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return table


def test_markdown_counts_and_matrix_columns(results: Path) -> None:
    hil(["report", str(results)])
    markdown = (results / "report.md").read_text(encoding="utf-8")
    records = _records()
    counts = Counter(record.verdict for record in records)
    table = _markdown_table(markdown, "## Verdicts")
    shown = {row[0]: int(row[1]) for row in table[2:] if row[0] != "**total**"}
    assert shown == {verdict: counts.get(verdict, 0) for verdict in shown}
    assert sum(shown.values()) == len(records)
    for record in records:
        table = _markdown_table(markdown, f"### {md_escape(record.platform)} on {record.backend}")
        column = table[0].index(md_escape(record.dtype))
        row = next(r for r in table if r[:2] == [md_escape(record.op), md_escape(record.limit)])
        cell = Counter(r.verdict for r in records if _same_cell(r, record))
        assert row[column].split() == [f"{n}{SHORT[v]}" for v, n in _in_order(cell)]
        card = (
            f"- {md_escape(record.limit)} · {md_escape(record.dtype)}: {md_escape(record.value)} "
            f"({record.documented}): **{record.verdict}** on {md_escape(record.backend)}"
        )
        assert card in markdown
    assert "<script" not in markdown and "<b>" not in markdown and "<img" not in markdown


def _same_cell(one: CaseRecord, other: CaseRecord) -> bool:
    fields = ("platform", "backend", "op", "limit", "dtype")
    return all(getattr(one, name) == getattr(other, name) for name in fields)


def _in_order(counts: Counter[str]) -> list[tuple[str, int]]:
    return [(verdict, counts[verdict]) for verdict in SHORT if counts[verdict]]


def test_failing_cases_link_to_existing_bundles(results: Path) -> None:
    failing = [record for record in _records() if record.verdict in FAILING_VERDICTS]
    bundled = failing[0]
    case_dir = results / "cases" / case_slug(bundled.id)
    case_dir.mkdir(parents=True)
    (case_dir / "model.onnx").write_bytes(b"placeholder: a report does not read the model")
    (case_dir / "toolkit.json").write_text('{"target_platform": "rk3562"}')
    (case_dir / "reproduce.py").write_text("# the vendor's reproduction script\n")
    (case_dir / "inputs").mkdir()  # kept as a user's are: nothing to draw again
    (case_dir / "inputs" / "0_x.npy").write_bytes(b"placeholder")
    journal = Journal(results)
    journal.append(dataclasses.replace(bundled, artifacts=f"cases/{case_dir.name}"))
    assert hil(["repro", str(results), bundled.id]) == 0
    hil(["report", str(results)])
    parsed = _parse_html(results / "report.html")
    hrefs = [str(value) for name, value in parsed.attrs if name == "href"]
    files = [href for href in hrefs if not href.startswith(("#", f"{CASE_PAGES}/"))]
    slug = case_slug(bundled.id)
    # the example of its cause (the causes section), then the failing case
    assert files == [f"bundles/{slug}/README.md", f"bundles/{slug}.tar.gz"] * 2
    ids = {str(value) for name, value in parsed.attrs if name == "id"}
    assert {href[1:] for href in hrefs if href.startswith("#")} <= ids  # anchors resolve
    assert all((results / href).is_file() for href in files)
    markdown = (results / "report.md").read_text(encoding="utf-8")
    assert f"[bundle](bundles/{slug}/README.md)" in markdown
    assert markdown.count("no bundle yet") == len(failing) - 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no journal"),
        ("", "holds no records"),
        ('{"id": "a"\n{}\n', f"{JOURNAL_NAME}:1: not valid JSON"),
    ],
)
def test_report_bad_journal_exits_2_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    if content is not None:
        (tmp_path / JOURNAL_NAME).write_text(content)
    assert hil(["report", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert str(tmp_path / JOURNAL_NAME) in error and message in error
    assert not (tmp_path / "report.html").exists()


# --- hil diff -------------------------------------------------------------------------------


def _write_run(folder: Path, records: list[CaseRecord]) -> Path:
    journal = Journal(folder)
    for record in records:
        journal.append(record)
    return folder


def _diff_runs(tmp_path: Path) -> tuple[Path, Path]:
    npu = [{"op": "MaxPool", "target": "NPU"}]
    old = [
        make_record("same"),
        make_record("verdict", "confirmed"),
        make_record("placement", placement=npu),
        make_record("tiled", placement=npu),
        make_record("metric-big", metrics={"max_abs": 0.001, "cosine": 0.9999}),
        make_record("metric-small", metrics={"max_abs": 0.00100, "cosine": 0.9999}),
        make_record("metric-gone", metrics={"max_abs": 0.001, "cosine": 0.9999}),
        make_record("backend"),
        make_record("dropped"),
        make_record("fixed", "violation"),
        make_record("drifted", "confirmed"),
    ]
    new = [
        make_record("same"),
        make_record("verdict", "wrong-result"),
        make_record("placement", placement=[{"op": "MaxPool", "target": "CPU"}]),
        make_record("tiled", placement=npu * 2),  # a compiler internal, not a change
        make_record("metric-big", metrics={"max_abs": 0.004, "cosine": 0.9999}),
        make_record("metric-small", metrics={"max_abs": 0.00105, "cosine": 0.9999}),
        make_record("metric-gone", metrics={"cosine": 0.9999}),
        make_record("backend", backend="rock-5b"),
        make_record("added"),
        make_record("fixed", "confirmed"),
        make_record("drifted", "doc-drift"),
        make_record("added-failing", "wrong-result"),
    ]
    return _write_run(tmp_path / "old", old), _write_run(tmp_path / "new", new)


def test_diff_reports_every_kind_of_change_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = _diff_runs(tmp_path)
    assert hil(["diff", str(old), str(new), "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    found = {(c["case_id"], c["kind"], c["metric"]) for c in document["changes"]}
    assert found == {
        ("verdict", "verdict", ""),
        ("placement", "placement MaxPool", ""),
        ("metric-big", "metric", "max_abs"),
        ("metric-gone", "metric", "max_abs"),
        ("backend", "backend", ""),
        ("dropped", "only-old", ""),
        ("added", "only-new", ""),
        ("fixed", "verdict", ""),
        ("drifted", "verdict", ""),
        ("added-failing", "only-new", ""),
    }
    by_case = {c["case_id"]: c for c in document["changes"]}
    assert (by_case["verdict"]["old"], by_case["verdict"]["new"]) == ("confirmed", "wrong-result")
    assert (by_case["placement"]["old"], by_case["placement"]["new"]) == ("NPU", "CPU")
    assert by_case["metric-gone"]["new"] is None
    assert document["summary"] == {
        "new_failures": ["added-failing", "verdict"],  # in case id order
        "fixed": ["fixed"],
        "other_verdict": ["drifted"],
        "backend_only": ["backend", "metric-big", "metric-gone", "placement"],
        "only_old": ["dropped"],
        "only_new": ["added"],
        "unchanged": 3,  # "same", "tiled", and "metric-small" below the 10 % threshold
        "internals": ["tiled"],
        "verdict_changes": 4,
    }


def test_diff_summary_line_comes_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = _diff_runs(tmp_path)
    assert hil(["diff", str(old), str(new)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "4 verdict changes (2 new failures, 1 fixed, 1 other), 4 backend-only changes, "
        "1 case only in the old run, 1 only in the new one, 3 unchanged (compiler internals: 1)"
    )
    assert lines[1].split() == ["case", "change", "old", "new"]
    # after the table: the failing causes that came and went, one line each
    first = next(i for i, line in enumerate(lines) if line.startswith("failing causes: "))
    assert all(line.startswith(("new cause ", "gone cause ")) for line in lines[first + 1 :])
    assert len(lines) == first + 1 + sum(map(int, re.findall(r"(\d+) (?:new|gone)", lines[first])))


def test_diff_threshold_option_and_table_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old, new = _diff_runs(tmp_path)
    assert hil(["diff", str(old), str(new), "--metric-threshold", "0.01"]) == 1
    assert "metric-small" in capsys.readouterr().out  # 5 % change, above the 1 % threshold
    assert hil(["diff", str(old), str(new), "--metric-threshold", "0.9"]) == 1
    table = capsys.readouterr().out.splitlines()[1:]  # after the summary line
    assert table[0].split() == ["case", "change", "old", "new"]
    assert not any(line.startswith("metric-big") for line in table)  # 75 % < 90 %
    assert any(line.split()[:2] == ["verdict", "verdict"] for line in table)


def test_diff_of_identical_runs_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, _ = _diff_runs(tmp_path)
    assert hil(["diff", str(old), str(old)]) == 0
    assert capsys.readouterr().out == (
        "0 verdict changes (0 new failures, 0 fixed, 0 other), 0 backend-only changes, "
        "0 cases only in the old run, 0 only in the new one, 11 unchanged (compiler internals: "
        "0)\n"
    )


def test_diff_piped_into_head_ends_quietly(tmp_path: Path) -> None:
    """A real pipe: head exits after 3 lines while hil still writes ~200 kB of table."""
    many = 3000
    old = _write_run(tmp_path / "old", [make_record(f"case-{i:05d}") for i in range(many)])
    new = _write_run(
        tmp_path / "new", [make_record(f"case-{i:05d}", "wrong-result") for i in range(many)]
    )
    hil_script = Path(sys.executable).with_name("hil")
    command = f"set -o pipefail; {hil_script} diff {old} {new} | head -n 3"
    # stdout buffered as in a user's shell (PYTHONUNBUFFERED changes how the break shows)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    env["PYTHONPATH"] = str(paths.ROOT)
    run = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, env=env, timeout=120
    )
    assert run.stderr == ""  # no BrokenPipeError traceback, no "Exception ignored"
    assert run.returncode == 1  # hil's own status: the runs differ
    lines = run.stdout.splitlines()
    assert len(lines) == 3 and lines[0].startswith(f"{many} verdict changes ({many} new failures")
    assert lines[2].split() == ["case-00000", "verdict", "confirmed", "wrong-result"]


def test_diff_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, _ = _diff_runs(tmp_path)
    assert hil(["diff", str(old), str(tmp_path / "nowhere")]) == 2
    assert str(tmp_path / "nowhere" / JOURNAL_NAME) in capsys.readouterr().err
    with pytest.raises(SystemExit) as caught:
        hil(["diff", str(old), str(old), "--metric-threshold", "-1"])
    assert caught.value.code == 2
    assert "must be a number >= 0, got '-1'" in capsys.readouterr().err


def test_limits_not_probed_are_listed_with_their_reason(results: Path) -> None:
    unprobed = [{"limit": "GRU/R/hidden_size", "reason": "model needs <800 MB> of weights"}]
    write_run_metadata(results, {"platform": "rk3562", "unprobed": unprobed})
    assert hil(["report", str(results)]) == 0
    markdown = (results / "report.md").read_text()
    assert "| GRU | hidden\\_size | R | model needs &lt;800 MB&gt; of weights |" in markdown
    assert "run: unprobed" not in markdown  # listed once, in its own section
    html = (results / "report.html").read_text()
    row = "<td>GRU</td><td>hidden_size</td><td>R</td><td>model needs &lt;800 MB&gt; of weights</td>"
    assert row in html


def test_report_shows_baseline_changes_known_issues_and_left_out_cases(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = _write_run(
        tmp_path / "baseline",
        [dataclasses.replace(r, verdict="confirmed") for r in _records() if r.id != "mp-8"]
        + [make_record("fixed-since", "violation")],
    )
    known = {
        "reference": "RK-77",
        "note": "Pow on CPU",
        "status": "changed",
        "expected": "violation",
    }
    Journal(results).append(make_record("pow-4", "confirmed", op="Pow", known=known))
    Journal(results).append(make_record("fixed-since", "confirmed"))
    meta = {
        "platform": "rk3562",
        "tier": "full",
        "baseline": str(baseline),
        "left_out": [{"id": "rk3562/GRU/float16/seq_length=8192", "reason": "slow: 600 s"}],
    }
    write_run_metadata(results, meta)
    assert hil(["report", str(results)]) == 0
    markdown = (results / "report.md").read_text(encoding="utf-8")
    header = _markdown_table("\n" + markdown, "# npu-hil report")
    assert dict(zip(header[0], header[2], strict=True))["tier"] == "full"
    assert "Left out: 1 of a slower tier" in markdown and "slow: 600 s" in markdown
    changes = markdown.split("## Changes against the baseline")[1].split("## Failing cases")[0]
    summary = "6 verdict changes (3 new failures, 1 fixed, 2 other)"
    assert f"{md_escape(baseline)}: {summary}" in changes
    capsys.readouterr()
    assert hil(["diff", str(baseline), str(results)]) == 1  # hil diff says the same
    assert capsys.readouterr().out.splitlines()[0].startswith(summary)
    rows = _markdown_table(changes, "")
    assert rows[2][:2] == [md_escape(HOSTILE_ID), "confirmed"]  # new failures first
    assert ["mp-8", "(not in the baseline)", "violation"] in rows
    failing = markdown.split("## Failing cases")[1].split("## ")[0]
    assert "- pow-4 on simulator: **confirmed**" in failing  # a known issue that changed
    assert "(known issue changed: RK-77)" in failing

    (baseline / JOURNAL_NAME).write_text("{damaged\n")
    assert hil(["report", str(results)]) == 0  # the report is written all the same
    markdown = (results / "report.md").read_text(encoding="utf-8")
    assert f"Baseline {md_escape(baseline)} unreadable: {md_escape(baseline)}" in markdown


def test_the_report_compares_with_the_baseline_sdk_by_sdk(tmp_path: Path) -> None:
    """As the run does when it excuses a failure the baseline had too: a release's records are
    compared with the same release's, never with another release's of the same case."""
    both = [make_record("x", "wrong-result", sdk="2.5.0"), make_record("x", sdk="2.3.2")]
    baseline = _write_run(tmp_path / "baseline", both)
    meta = {"baseline": str(baseline)}
    # the same verdicts in another journal order: nothing changed
    changes = baseline_changes(meta, both[::-1])
    assert changes is not None and changes.summary is not None
    assert changes.summary.verdict_changes == 0 and changes.summary.unchanged == 2
    # one release fixed: named with its SDK
    now = [make_record("x", sdk="2.5.0"), make_record("x", sdk="2.3.2")]
    changes = baseline_changes(meta, now)
    assert changes is not None and changes.summary is not None
    assert changes.summary.fixed == ["x@2.5.0"] and changes.summary.unchanged == 1
    # a run on one release the baseline did not run: its failure is new, as the run counts it
    changes = baseline_changes(meta, [make_record("x", "wrong-result", sdk="2.4.0")])
    assert changes is not None and changes.summary is not None
    assert changes.summary.new_failures == ["x"] and changes.summary.only_old == []


def test_the_overview_gives_cases_and_the_worst_verdict_per_operator_and_platform(
    results: Path,
) -> None:
    hil(["report", str(results)])
    markdown = (results / "report.md").read_text(encoding="utf-8")
    table = _markdown_table(markdown, "## Operators × platforms")
    columns = table[0][1:]
    records = _records()
    for record in records:
        where = f"{record.platform}/{record.backend}"
        row = next(r for r in table[2:] if r[0] == md_escape(record.op))
        key = (record.op, record.platform, record.backend)
        same = [r for r in records if (r.op, r.platform, r.backend) == key]
        chip = " ".join(
            f"{sum(r.verdict == v for r in same)}{letter}"
            for v, letter in SHORT.items()
            if any(r.verdict == v for r in same)
        )
        assert row[1 + columns.index(md_escape(where))] == chip
    assert markdown.index("## Failing cases") < markdown.index("## Operators × platforms")
    assert markdown.index("## Operators × platforms") < markdown.index("## Documented limits")
    parser = _parse_case_pages(results)  # the cells' cases are a link away
    anchors = {value for name, value in parser.attrs if name == "id"}
    overview = (results / "report.html").read_text(encoding="utf-8").split('id="overview"')[1]
    linked = re.findall(rf'href="{CASE_PAGES}/[^"#]+\.html#([^"]+)"', overview.split("</table>")[0])
    assert len(linked) == len({(r.op, r.platform, r.backend) for r in records})
    assert set(linked) <= anchors  # each cell opens cases that exist


def test_an_overview_cell_marks_known_issues_and_is_not_coloured_by_them(tmp_path: Path) -> None:
    """A green run's known violations: ``2C 1V (1 known)``, coloured as known issues, not as
    violations; a second, unknown violation colours it as one."""
    known = {"reference": "RK-1", "note": "", "status": "as-expected", "expected": "violation"}
    pows = [make_record(f"pow-{n}", op="Pow", limit="pow.exponent") for n in range(2)]
    pows.append(make_record("pow-0-cpu", "violation", op="Pow", limit="pow.exponent", known=known))
    folder = _write_run(tmp_path / "green", pows)
    hil(["report", str(folder)])
    table = _markdown_table(
        (folder / "report.md").read_text(encoding="utf-8"), "## Operators × platforms"
    )
    assert table[2][1] == "2C 1V (1 known)"
    assert (
        'class="v-known" title="known issues, as expected"><a href="report-cases/'
        in (folder / "report.html")
        .read_text(encoding="utf-8")
        .split('id="overview"')[1]
        .split("</table>")[0]
    )

    pows.append(make_record("pow-9", "violation", op="Pow", limit="pow.exponent"))
    folder = _write_run(tmp_path / "red", pows)
    hil(["report", str(folder)])
    table = _markdown_table(
        (folder / "report.md").read_text(encoding="utf-8"), "## Operators × platforms"
    )
    assert table[2][1] == "2C 2V (1 known)"
    overview = (folder / "report.html").read_text(encoding="utf-8").split('id="overview"')[1]
    assert 'class="v-violation"' in overview.split("</table>")[0]


def test_a_verdict_the_report_does_not_list_shows_as_its_word() -> None:
    """A verdict word newer than the report's letters (``brand-new``) is shown, not dropped,
    and an operator with only such cases does not stop the report."""
    records = [
        make_record("pow-1", op="Pow", limit="pow.exponent"),
        make_record("pow-2", "brand-new", op="Pow", limit="pow.exponent"),
        make_record("gru-1", "brand-new", op="GRU", limit="gru.batch"),
    ]
    report = build_report(records, {"platform": "rk3562"}, {})
    assert [row.cells[0].chip for row in report.overview if row.cells[0]] == [
        "1brand-new",
        "1C 1brand-new",
    ]
    page = render_html(report)
    assert "1brand-new" in page and "1C 1brand-new" in page
    (cards,) = render_case_pages(report).values()
    assert '<td class="v-brand-new"><a href="#cell-' in cards
    assert "| Pow | pow.exponent | 1C 1brand-new |" in render_markdown(report)


def test_a_limit_whose_every_case_tested_nothing_is_listed_untested(tmp_path, capsys) -> None:
    """In the report (beside the limits no case probes) and in ``hil diff`` (limits no case
    tested now, or tested again), per platform and dtype."""
    tested = [
        make_record(
            "rv1106/Hardmax/float16/width=3", platform="rv1106", op="Hardmax", limit="Hardmax/w"
        )
    ]
    refused = [
        dataclasses.replace(record, verdict="untestable", detail="refused like its control")
        for record in tested
    ]
    report = build_report(refused, {"platform": "rv1106"}, {})
    (row,) = report.unprobed
    assert (row.op, row.prop) == ("Hardmax", "w")
    assert row.reasons == ["rv1106 float16: refused or moved like its inside control"]
    assert build_report(tested, {"platform": "rv1106"}, {}).unprobed == []
    old, new = tmp_path / "old", tmp_path / "new"
    for folder, records in ((old, tested), (new, refused)):
        for record in records:
            Journal(folder).append(record)
        write_run_metadata(folder, {"platform": "rv1106"})
    hil(["diff", str(old), str(new)])
    assert (
        "Limits no case tested (1):\n"
        "  Hardmax/w (rv1106 float16: refused or moved like its inside control)\n"
    ) in capsys.readouterr().out
    hil(["diff", str(new), str(old), "--json"])
    assert json.loads(capsys.readouterr().out)["untested"]["again"] == [
        "Hardmax/w (rv1106 float16: refused or moved like its inside control)"
    ]
