"""Each SDK judged against its own release's document; the report tells a document change from
a behaviour change."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from tests.helpers.declared import MODELS
from tests.helpers.records import make_record

from harness.cases.case import Case
from harness.cases.operators import operator_cases
from harness.report import write_reports
from harness.report.sdk_matrix import build_sdk_matrix
from harness.results.journal import Journal
from harness.vendors.rknn.documents.judged import document_version, judged_against
from harness.vendors.rknn.documents.operator_list import committed as catalogue
from harness.vendors.rknn.documents.operators import seed_catalogue
from harness.vendors.rknn.model_io.cases import model_io_cases


@pytest.fixture(scope="module")
def expand_case() -> Case:
    cases = operator_cases(seed_catalogue(), MODELS, ["Expand"]).cases
    return next(c for c in cases if c.limit.startswith("Expand/broadcast/[b,c,1,w]"))


def test_a_release_takes_the_newest_document_at_or_before_it() -> None:
    assert [document_version(s) for s in ("2.2.0", "2.3.0", "2.3.2", "2.5.0")] == [
        "V2.2.0",
        "V2.3.0",
        "V2.3.2",
        catalogue.versions()[-1],
    ]
    assert document_version("2.1.0") is None


def test_2_5_0_is_judged_against_seed_001_for_its_operators(expand_case: Case) -> None:
    assert judged_against(expand_case, "2.5.0") == {"judged_against": "seed 001 (RKNN2 2.5.0)"}


def test_2_3_2_is_judged_against_its_own_operator_list(expand_case: Case) -> None:
    found = judged_against(expand_case, "2.3.2")
    entry = catalogue.load("V2.3.2").group("rk3562").entry("Expand")
    assert entry is not None
    assert found["judged_against"].startswith(
        f"RKNN Compiler Support Operator List V2.3.2 § {entry.section}, p. "
    )
    assert found["document_reading"] == "[b, c, 1, w]->[b, c, h, w]: h ∈ [1, 8192]"
    assert "[b, c, 1, w]" in found["document_text"]
    assert "fallback" not in found and "document_changed" not in found


def test_where_the_release_document_reads_otherwise_the_record_says_so(
    expand_case: Case,
) -> None:
    # V2.2.0 gives Max per-layer and per-channel quantization where seed 001 has per-layer.
    case = dataclasses.replace(expand_case, op="Max", limit="Max/A/quantization")
    found = judged_against(case, "2.2.0")
    assert found["judged_against"] == "seed 001 (RKNN2 2.5.0)"
    assert "V2.2.0" in found["fallback"]
    assert found["document_changed"] == (
        "seed 001 (RKNN2 2.5.0): quantization ∈ {per-layer}; "
        "V2.2.0: quantization ∈ {per-layer, per-channel}"
    )


def test_another_platform_on_2_5_0_falls_back_to_the_newest_list(expand_case: Case) -> None:
    case = dataclasses.replace(expand_case, platform="rk3588")
    found = judged_against(case, "2.5.0")
    assert found["fallback"] == "no public operator list for 2.5.0; the newest before it"
    assert found["judged_against"].startswith("RKNN Compiler Support Operator List V2.3.2 § 3.2.")


def test_model_io_cases_keep_seed_003_and_name_the_chapter_5_check() -> None:
    case = model_io_cases("rk3562")[0]
    assert judged_against(case, "2.5.0") == {"judged_against": "seed 003 (RKNN2 2.5.0)"}
    older = judged_against(case, "2.3.0")
    assert older["judged_against"] == "seed 003 (RKNN2 2.5.0)"
    assert older["fallback"].startswith("V2.3.0 § 5: its input tables are images")


def test_the_report_separates_document_changes_from_behaviour_changes(tmp_path: Path) -> None:
    def rec(case: str, sdk: str, verdict: str, **source: str) -> object:
        return make_record(
            f"rk3562/Max/float16/{case}",
            verdict,
            op="Max",
            limit=f"Max/{case}",
            sdk=sdk,
            source={"seed": "001", "text": "t", "judged_against": f"doc {sdk}", **source},
        )

    changed = "seed 001: per-layer; V2.2.0: per-layer, per-channel"
    records = [
        rec("A", "2.2.0", "violation", document_changed=changed),
        rec("A", "2.5.0", "confirmed"),
        rec("B", "2.2.0", "violation"),
        rec("B", "2.5.0", "confirmed"),
    ]
    matrix = build_sdk_matrix(records)  # type: ignore[arg-type]
    assert matrix is not None
    causes = {c.case_id.rsplit("/", 1)[-1]: c.cause for c in matrix.changes}
    assert causes == {"A": f"the document changed ({changed})", "B": "the behaviour changed"}
    journal = Journal(tmp_path)
    for record in records:
        journal.append(record)  # type: ignore[arg-type]
    markdown = write_reports(tmp_path)[0].read_text()
    section = markdown.split("## SDK releases side by side")[1].split("\n## ")[0]
    assert "1 where the document changed, 1 where the behaviour did" in section
    assert "SDK 2.2.0: doc 2.2.0 (2 cases)" in section
    assert f"confirmed on 2.5.0; the document changed ({changed})" in section
