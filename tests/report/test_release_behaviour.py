"""Release changes by behaviour: the SDK section and ``hil diff`` list a change of build outcome,
placement, precision or result even when the verdict stays, and count the compiler's internal
renames and splits apart. Journals shaped like those of a four-release run (2.2.0, 2.3.0, 2.3.2,
2.5.0 on the simulator) with the layer tables the toolkits print."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.helpers.cli import hil
from tests.helpers.records import make_record

from harness.report import write_reports
from harness.report.sdk_matrix import build_sdk_matrix
from harness.results.journal import Journal, write_run_metadata
from harness.results.records import CaseRecord
from harness.vendors import layer_aliases

SDKS = ("2.2.0", "2.3.0", "2.3.2", "2.5.0")
HARDMAX = "rk3562/Hardmax/float16/axis=1"
ABORTED = (
    "build aborted (SIGABRT): compiler crash (SIGABRT in rknn.build, compiler pass OpEmit); "
    "confirmed: the same crash again in a fresh worker process"
)


def layers(*rows: tuple[str, str, str]) -> list[dict[str, Any]]:
    return [{"op": op, "target": target, "dtype": dtype, "name": op} for op, target, dtype in rows]


def check(prop: str, observed: str, status: str) -> dict[str, Any]:
    return {
        "prop": prop,
        "limits": [],
        "documented": "supported",
        "observed": observed,
        "status": status,
        "phase": prop,
        "inconsistent": [],
    }


def record(
    case_id: str, sdk: str, verdict: str, placement: list[dict[str, Any]], **kw: Any
) -> CaseRecord:
    op = case_id.split("/")[1]
    observed = kw.pop("observed", "on NPU")
    checks = [check("placement", observed, verdict)]
    if placement:
        checks.append(check("result", "outputs match the reference", "confirmed"))
    return make_record(
        case_id,
        verdict,
        op=op,
        limit=f"{op}/x",
        sdk=sdk,
        placement=placement,
        checks=checks,
        detail=f"placement: {observed}",
        metrics={"cosine": 1.0} if placement else {},
        **kw,
    )


def four_releases() -> list[CaseRecord]:
    on_cpu = layers(("Hardmax", "CPU", "FLOAT16"))
    cpu = "CPU fallback: Hardmax: Hardmax on CPU"
    gru, lstm, pool = (
        "rk3562/GRU/float16/typical",
        "rk3562/LSTM/float16/typical",
        "rk3562/MaxPool/float16/kernel_h=8",
    )
    records = [
        record(HARDMAX, "2.2.0", "violation", on_cpu, observed=cpu),
        record(HARDMAX, "2.3.0", "violation", [], observed=ABORTED),
        record(HARDMAX, "2.3.2", "violation", on_cpu, observed=cpu),
        record(HARDMAX, "2.5.0", "violation", on_cpu, observed=cpu),
    ]
    for sdk in SDKS:
        new = sdk == "2.5.0"  # renames the recurrent layers and tiles the kernel-8 MaxPool
        records.append(
            record(gru, sdk, "confirmed", layers(("exGRU" if new else "GRU", "NPU", "FLOAT16")))
        )
        records.append(
            record(lstm, sdk, "confirmed", layers(("exLSTM" if new else "LSTM", "NPU", "FLOAT16")))
        )
        records.append(
            record(
                pool, sdk, "confirmed", layers(*[("MaxPool", "NPU", "FLOAT16")] * (2 if new else 1))
            )
        )
    # A real change with the verdict kept: 2.5.0 runs this int8 Pow in fp16 (still outside)
    for sdk in SDKS:
        dtype = "FLOAT16" if sdk == "2.5.0" else "INT8"
        records.append(
            record(
                "rk3562/Pow/int8/values=4", sdk, "limit-confirmed", layers(("Pow", "NPU", dtype))
            )
        )
    return records


def test_the_sdk_section_lists_a_kept_verdict_whose_build_aborted_and_counts_internals_apart() -> (
    None
):
    matrix = build_sdk_matrix(four_releases(), aliases=layer_aliases())
    assert matrix is not None
    hardmax = [c for c in matrix.changes if c.case_id == HARDMAX]
    assert [(c.kind, c.old_sdk, c.new_sdk, c.what) for c in hardmax] == [
        (
            "behaviour-changed",
            "2.2.0",
            "2.3.0",
            ("build aborted (SIGABRT) on 2.3.0 (built and ran on 2.2.0)",),
        ),
        (
            "behaviour-changed",
            "2.3.0",
            "2.3.2",
            ("built and ran on 2.3.2 (build aborted (SIGABRT) on 2.3.0)",),
        ),
    ]
    pow_change = [c for c in matrix.changes if "Pow" in c.case_id]
    assert [c.what for c in pow_change] == [("precision Pow: FLOAT16 on 2.5.0 (INT8 on 2.3.2)",)]
    assert len(matrix.changes) == 3  # the renames and the split are not changes
    assert matrix.internals == 3  # GRU -> exGRU, LSTM -> exLSTM, one MaxPool -> two
    # Without the vendor's alias table a rename is a change of placement.
    plain = build_sdk_matrix(four_releases())
    assert plain is not None and len(plain.changes) == 5 and plain.internals == 1


def test_the_report_names_the_abort_in_words(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    for each in four_releases():
        journal.append(each)
    write_run_metadata(tmp_path, {"documents": "RKNN2 Reference V2.5.0"})
    markdown = write_reports(tmp_path, layer_aliases())[0].read_text()
    section = markdown.split("## SDK releases side by side")[1].split("\n## ")[0]
    assert "build aborted (SIGABRT) on 2.3.0 (built and ran on 2.2.0)" in section
    assert "Compiler internals: 3" in section


def test_hil_diff_says_build_aborted_and_counts_renames_as_internals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = Journal(tmp_path)
    for each in four_releases():
        journal.append(each)
    assert hil(["diff", str(tmp_path), "--old-sdk", "2.2.0", "--new-sdk", "2.3.0"]) == 1
    out = capsys.readouterr().out
    assert "0 verdict changes" in out and "1 backend-only change," in out
    [row] = [line.split() for line in out.splitlines() if line.startswith(HARDMAX)]
    assert row == [HARDMAX, "build", "built", "and", "ran", "build", "aborted", "(SIGABRT)"]
    table = out.split("\ncase ", 1)[1].split("\nfailing causes: ")[0]  # the changes alone
    assert "metric" not in table and "placement" not in table  # consequences of the abort
    assert hil(["diff", str(tmp_path), "--old-sdk", "2.3.2", "--new-sdk", "2.5.0"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0].endswith("4 unchanged (compiler internals: 3)")
    assert "1 backend-only change," in out  # the Pow's precision, nothing else
    assert "GRU" not in out and "MaxPool" not in out
