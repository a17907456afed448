"""Cause signatures on recorded simulator runs: one cause per observation, whatever the case.

tests/data/causes/journal.jsonl holds real records of simulator runs (RK3588, RK3562, RV1106,
RK2118; up to two cases of each failing cause, one of each of some document findings).
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from tests.helpers import paths

from harness.cli import main
from harness.judge.verdict import FAILING_VERDICTS
from harness.policy.baseline import Baseline
from harness.report import write_reports
from harness.report.cause_section import HTML_OPERATORS, cause_page
from harness.report.causes import (
    GROUPED,
    cause_changes,
    causes,
    metric_class,
    normalised,
    signature,
)
from harness.report.matrix import case_href
from harness.results.journal import Journal, read_records, write_run_metadata
from harness.results.records import CaseRecord, case_slug, record_key
from harness.vendors import layer_aliases

RECORDED = paths.TESTS / "data" / "causes"


@pytest.fixture(scope="module")
def recorded() -> list[CaseRecord]:
    return read_records(RECORDED)


def _by_id(records: list[CaseRecord], case_id: str) -> CaseRecord:
    return next(record for record in records if record.id == case_id)


def test_every_grouped_record_has_a_signature_and_the_others_none(recorded):
    for record in recorded:
        assert (signature(record) is not None) == (record.verdict in GROUPED), record.id
    confirmed = dataclasses.replace(recorded[0], verdict="confirmed")
    assert signature(confirmed) is None


def test_a_signature_ignores_what_names_the_case(recorded):
    """Same observation, another id, SDK, seed, parameters, folder, time or known-issue
    match: the same signature (a rerun, another SDK, another value of the same limit)."""
    for record in recorded:
        other = dataclasses.replace(
            record,
            id=record.id + "/again",
            value="99999",
            sdk="9.9.9",
            seed=record.seed + 1,
            params={"other": 1},
            artifacts="cases/elsewhere",
            started="2030-01-01T00:00:00Z",
            duration_s=record.duration_s + 100,
            versions={"rknn-toolkit2": "9.9.9"},
            known={"reference": "X-1", "note": "", "status": "as-expected", "expected": "x"},
        )
        assert signature(other, layer_aliases()) == signature(record, layer_aliases()), record.id


def test_the_same_problem_on_other_platforms_operators_and_values_is_one_cause(recorded):
    found = {cause.signature.key: cause for cause in causes(recorded, layer_aliases())}
    by_case = {r.id: cause for cause in found.values() for r in cause.records}
    # MaxPool int8 wrong results with large pads, on two platforms and two pads
    maxpool = by_case["rk3588/MaxPool/int8/pad_top=7"]
    assert maxpool.values("platform") == ["rk3562", "rk3588"]
    assert maxpool.signature.stage == "numeric"
    assert maxpool.signature.metric == "cosine 0.5-0.99, mismatches >=10%"
    # the RV1106 toolkit refusing a float16 build: Hardmax and Div, one message
    refusal = by_case["rv1106/Hardmax/float16/typical"]
    assert by_case["rv1106/Div/float16/B=[1,1,1,1]"] is refusal
    assert refusal.signature.stage == "build"
    assert "target_platform(<platform>) not support do_quantization" in refusal.signature.message
    # an operator the platform cannot run on its CPU, on RK2118 and on RV1106
    hardmax = by_case["rv1106/Hardmax/int8/height*width=8193"]
    assert hardmax.values("platform") == ["rk2118", "rv1106"]
    assert hardmax.signature.placement == "Hardmax->CPU"
    # Min on the CPU, in float16 on RK3588 and int8 on RV1106
    assert by_case["rk3588/Min/float16/B=[1,1,1,1]"] is by_case["rv1106/Min/int8/B=[1,1,1,1]"]
    # and on RK2118, whose CPU cannot run it: another check decided, another cause
    assert by_case["rk2118/Min/float16/typical"].signature.check == "platform CPU operators"
    assert by_case["rk2118/Min/float16/typical"] is not by_case["rk3588/Min/float16/B=[1,1,1,1]"]


def test_different_toolkit_messages_are_never_merged(recorded):
    by_case = {r.id: signature(r, layer_aliases()) for r in recorded}
    aborts = [
        by_case["rk3588/ConvTranspose/int8/kernel_h=1"],  # OpEmit: true_pad < 0
        by_case["rk3588/Convolution/int8/pads_top=15"],  # RKNNTilingPass
        by_case["rk3562/Transpose/int8/w1=8191"],  # SIGILL
        by_case["rk2118/AveragePool/int8/typical"],  # OpEmit: Meet unsupported conv
    ]
    assert all(sig is not None and sig.stage == "build" for sig in aborts)
    assert len({sig.key for sig in aborts if sig}) == len(aborts)
    # one word of the toolkit's message changed: another cause
    record = _by_id(recorded, "rk3588/exSDPAttention/int8/typical")
    changed = [
        {**check, "observed": check["observed"].replace("TypeError", "ValueError")}
        for check in record.checks
    ]
    other = dataclasses.replace(
        record, checks=changed, detail=record.detail.replace("TypeError", "ValueError")
    )
    assert signature(other) != signature(record)
    assert signature(other).message.replace("ValueError", "TypeError") == signature(record).message


def test_every_recorded_failing_message_is_its_own_cause(recorded):
    """Two failing records share a cause exactly when their deciding observations read the same
    once numbers and names are out: no two different texts under one key."""
    texts: dict[str, set[str]] = {}
    for record in recorded:
        sig = signature(record, layer_aliases())
        if sig is not None and record.verdict in FAILING_VERDICTS:
            texts.setdefault(sig.key, set()).add(sig.message)
    assert all(len(messages) == 1 for messages in texts.values())
    assert len(texts) >= 25  # the recorded runs' failing causes


def test_normalised_strips_numbers_paths_shapes_hex_and_names():
    text = (
        "FAIL : Exception during initialization: /onnxruntime_src/core/nn/pool_attributes.h:79 "
        "at 0x7f3a2b10, shape [1, 3, 224, 224] vs (1, 8) kernel 8x8, Pow(15) node with name 'Y',"
        " input tensor name: X0 input type: 3, max abs error 0.9961, cosine 8.5e-01 on RV1106;\n"
        "   exSoftmax13 int8 SIGABRT exit code 134"
    )
    assert normalised(text, "rv1106") == (
        "FAIL : Exception during initialization: <path>:<n> at <hex>, shape <shape> vs <shape> "
        "kernel <shape>, Pow(<n>) node with name <name>, input tensor name: <name> input type: "
        "<n>, max abs error <n>, cosine <n> on <platform>; exSoftmax13 int8 SIGABRT exit code 134"
    )
    # a platform name inside a longer word is not the platform
    assert normalised("rv1106b target", "rv1106") == "rv1106b target"


@pytest.mark.parametrize(
    ("metrics", "band"),
    [
        ({"cosine": 0.9995, "mismatches": 1, "count": 1000}, "cosine >=0.999, mismatches <1%"),
        ({"cosine": 0.995, "mismatches": 50, "count": 1000}, "cosine 0.99-0.999, mismatches 1-10%"),
        ({"cosine": 0.85, "mismatches": 31, "count": 80}, "cosine 0.5-0.99, mismatches >=10%"),
        ({"cosine": 0.1, "mismatches": 80, "count": 80}, "cosine <0.5, mismatches >=10%"),
        ({"cosine": float("nan"), "count": 8}, "cosine not finite"),
        ({}, ""),
    ],
)
def test_metric_class(metrics, band):
    assert metric_class(metrics) == band


def test_causes_order_examples_and_json(recorded):
    found = causes(recorded, layer_aliases())
    statuses = [cause.signature.status for cause in found]
    assert statuses.index("doc-drift") > max(
        i for i, status in enumerate(statuses) if status in FAILING_VERDICTS
    )
    assert sum(len(cause.records) for cause in found) == sum(
        record.verdict in GROUPED for record in recorded
    )
    # a bundled case is the example, whatever its order
    maxpool = next(c for c in found if c.example.op == "MaxPool" and c.failing)
    last = maxpool.records[-1]
    bundled = causes(recorded, layer_aliases(), {f"{last.id}@{last.sdk}": "bundles/x"})
    again = next(c for c in bundled if c.signature == maxpool.signature)
    assert again.example is last and again.bundle == "bundles/x"
    data = again.to_json()
    assert data["key"] == maxpool.signature.key and data["cases"] == len(maxpool.records)
    assert data["platforms"] == ["rk3562", "rk3588"] and data["bundle"] == "bundles/x"
    assert data["example"] == f"{last.id}@{last.sdk}"


def _recorded_run(tmp_path: Path, records: list[CaseRecord]) -> Path:
    results = tmp_path / "results"
    journal = Journal(results)
    for record in records:
        journal.append(record)
    write_run_metadata(results, {"platform": "all", "tier": "default"})
    return results


def test_the_report_shows_causes_first_after_the_counts(tmp_path, recorded):
    results = _recorded_run(tmp_path, recorded)
    bundled = _by_id(recorded, "rk3562/MaxPool/int8/pad_top=7")
    (results / "bundles" / case_slug(record_key(bundled))).mkdir(parents=True)
    (results / "bundles" / case_slug(record_key(bundled)) / "case.json").write_text("{}")
    markdown, page = (path.read_text() for path in write_reports(results, layer_aliases()))

    headings = [line for line in markdown.splitlines() if line.startswith("## ")]
    assert headings[:2] == ["## Verdicts", "## Causes"]
    found = causes(recorded, layer_aliases())
    # what fails the run apart from the causes whose cases are all known issues as expected
    failing = [cause for cause in found if cause.fails_run]
    known = [cause for cause in found if cause.failing and not cause.fails_run]
    assert failing and known
    section = markdown.split("## Causes", 1)[1].split("\n## ", 1)[0]
    assert f"Failing: {len(failing)} causes over {sum(len(c.records) for c in failing)} cases" in (
        section
    )
    cases = sum(len(c.records) for c in known)
    assert f"Known issues, as expected: {len(known)} causes over {cases} cases" in section
    maxpool = next(c for c in found if bundled in c.records)
    row = next(
        line for line in section.splitlines() if line.startswith(f"| {maxpool.signature.key}")
    )
    assert "| wrong-result | 2 |  | rk3562, rk3588 | MaxPool | int8 | 2.5.0 |" in row
    assert f"(bundles/{case_slug(record_key(bundled))}/README.md)" in row  # the bundled example
    assert "<details><summary>The document's findings:" in section

    html = page.split('<h2 id="causes">', 1)[1].split("<h2", 1)[0]
    assert page.index('id="verdicts"') < page.index('id="causes"') < page.index('id="failures"')
    assert html.count("<tr>") == len(found) + 3  # a header row per table
    assert f'<code id="{maxpool.signature.key}">' in html
    assert f'href="bundles/{case_slug(record_key(bundled))}/README.md"' in html
    # the cases are a link away: inline, only each cause's example links to a card
    assert len(re.findall(r'href="[^"]*#case-', html)) == len(found)
    assert f'<a href="{cause_page(maxpool)}">2</a>' in html
    # on the cause's page, every case links to its card, which is there
    listing = (results / cause_page(maxpool)).read_text(encoding="utf-8")
    assert f'href="../report.html#{maxpool.signature.key}"' in listing
    assert f'href="../bundles/{case_slug(record_key(bundled))}/README.md"' in listing
    for record in maxpool.records:
        href = case_href(record)
        assert f'<a href="{href.removeprefix("report-cases/")}">{record.id}</a>' in listing
        card, anchor = href.split("#")
        assert f'id="{anchor}"' in (results / card).read_text(encoding="utf-8")


def test_a_cause_of_many_operators_names_the_first_in_its_row_and_all_on_its_page(
    tmp_path, recorded
):
    """The MaxPool int8 wrong result met by ten operators: report.html's row names eight and
    how many more, the cause's page all ten; report.md's row all ten."""
    maxpool = _by_id(recorded, "rk3562/MaxPool/int8/pad_top=7")
    ops = [f"MaxPool{n}" for n in range(HTML_OPERATORS + 2)]
    records = [dataclasses.replace(maxpool, id=f"rk3562/{op}/int8/pad_top=7", op=op) for op in ops]
    (cause,) = causes(records, layer_aliases())  # the operator is not part of the cause
    results = _recorded_run(tmp_path, records)
    markdown, page = (path.read_text() for path in write_reports(results, layer_aliases()))
    row = page.split(f'id="{cause.signature.key}"')[1].split("</tr>")[0]
    assert f'<td class="list">{", ".join(ops[:HTML_OPERATORS])} and 2 more</td>' in row
    assert f"<td>{', '.join(ops)}</td>" in (results / cause_page(cause)).read_text()
    assert f"| {', '.join(ops)} |" in markdown


def _passing(record: CaseRecord) -> CaseRecord:
    """The record as it would be had the case passed: no cause."""
    return dataclasses.replace(record, verdict="confirmed", detail="", checks=[])


def _two_runs(tmp_path: Path, recorded: list[CaseRecord]) -> tuple[Path, Path, str, str]:
    """A baseline and a run from the recorded records: the run fails one cause more (the
    baseline's cases of it passed) and one cause less (its cases pass now)."""
    failing = [cause for cause in causes(recorded, layer_aliases()) if cause.failing]
    appeared, went = failing[0], failing[1]
    old = [_passing(r) if r in appeared.records else r for r in recorded]
    new = [_passing(r) if r in went.records else r for r in recorded]
    old_dir, new_dir = tmp_path / "old", tmp_path / "new"
    for folder, records in ((old_dir, old), (new_dir, new)):
        journal = Journal(folder)
        for record in records:
            journal.append(record)
    write_run_metadata(old_dir, {"platform": "all"})
    write_run_metadata(new_dir, {"platform": "all", "baseline": str(old_dir)})
    return old_dir, new_dir, appeared.signature.key, went.signature.key


def test_hil_diff_counts_the_causes_that_came_and_went(tmp_path, recorded, capsys):
    old_dir, new_dir, appeared, went = _two_runs(tmp_path, recorded)
    kept = len([c for c in causes(recorded, layer_aliases()) if c.failing]) - 2
    assert main(["diff", str(old_dir), str(new_dir)]) == 1
    text = capsys.readouterr().out
    assert f"\nfailing causes: 1 new, 1 gone, {kept} in both\n" in text  # after the table
    assert f"new cause {appeared}: " in text and f"gone cause {went}: " in text
    assert main(["diff", str(old_dir), str(new_dir), "--json"]) == 1
    document = json.loads(capsys.readouterr().out)["causes"]
    assert [cause["key"] for cause in document["new"]] == [appeared]
    assert [cause["key"] for cause in document["gone"]] == [went]
    assert document["kept"] == kept and document["new"][0]["cases"] >= 1
    # a run against itself: no cause came or went
    assert main(["diff", str(new_dir), str(new_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["causes"] == {
        "new": [],
        "gone": [],
        "kept": kept + 1,
    }


def test_a_case_not_run_again_does_not_make_its_cause_gone(recorded):
    failing = [cause for cause in causes(recorded, layer_aliases()) if cause.failing]
    rest = [r for r in recorded if r not in failing[0].records]
    changes = cause_changes(recorded, rest, layer_aliases())
    assert changes.gone == [] and changes.new == []


def test_the_report_and_the_nightly_baseline_count_causes_against_the_baseline(tmp_path, recorded):
    old_dir, new_dir, appeared, went = _two_runs(tmp_path, recorded)
    markdown, page = (path.read_text() for path in write_reports(new_dir, layer_aliases()))
    section = markdown.split("## Causes", 1)[1].split("\n## ", 1)[0]
    assert "Against the baseline: 1 new, 1 gone, " in section
    assert f"- gone: {went}: " in section and f"| {appeared} (new) | " in section
    assert f'<code id="{appeared}">{appeared} (new)</code>' in page

    comparison = Baseline(old_dir, FAILING_VERDICTS, layer_aliases(), vendor="").compare(
        read_records(new_dir)
    )
    assert [key for key, _, _ in comparison.new_causes] == [appeared]
    assert [key for key, _, _ in comparison.gone_causes] == [went]
