"""Redaction never rewrites identifiers: a secret that is also a limit value (``8192``) or part
of a model's ``--name`` leaves case ids, case folders and ``--resume`` intact, and a secret
that plain is named in a warning at the start of a run."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import onnx
import pytest
from tests.fakes.sshd import onnx_model
from tests.helpers.boards import recipe
from tests.helpers.declared import MODELS

from harness.cases.case import Case
from harness.cases.operators import operator_cases
from harness.cases.user_models import model_case
from harness.documented.properties import PLACEMENT, RESULT
from harness.modelfiles.prepare import prepare
from harness.models.builder import OperatorSpec
from harness.pipeline import CaseExecutor, Stages
from harness.results.journal import finished_ids, read_records
from harness.results.records import record_key
from harness.targets.job import Job
from harness.targets.observation import Observation
from harness.text import REDACTED, warn_weak_secrets
from harness.vendors.rknn.documents.operators import seed_catalogue


class LeakyBuild:
    """A backend whose build rejects every model with a message repeating a secret."""

    observes = frozenset({PLACEMENT, RESULT})

    def __init__(self, secret: str) -> None:
        self.secret = secret

    def run(self, job: Job) -> Observation:
        said = f"login with password={self.secret} refused"
        return Observation(
            "leaky", failed_stage="build", error=said, log=said + "\n", observes=self.observes
        )


def run_leaky(
    results: Path, case: Case, secret: str, specs: dict[str, OperatorSpec] | None = None
) -> None:
    """``case`` on a backend that repeats ``secret`` in its error and log, then journaled: its
    free text redacted, its identity whole, so ``--resume`` skips it."""
    models = {**MODELS.specs, **(specs or {})}
    case = replace(case, control=None)  # judged alone: its control would be refused alike
    executor = CaseExecutor(results, LeakyBuild(secret), Stages(models=models, recipe=recipe))
    record = executor.execute(case)
    assert record.id == case.id  # the record handed back keeps its id too
    assert REDACTED in record.detail and f"={secret}" not in record.detail
    (journaled,) = read_records(results)
    assert journaled.id == case.id and journaled.verdict == "violation"
    assert (results / journaled.artifacts).is_dir()
    assert finished_ids(results) == {record_key(journaled)}


def test_a_numeric_secret_that_is_a_limit_value_leaves_case_ids_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HIL_RK3562_PW", "8192")
    case = next(c for c in operator_cases(seed_catalogue(), MODELS).cases if c.id.endswith("=8192"))
    run_leaky(tmp_path, case, "8192")
    line = json.loads((tmp_path / "journal.jsonl").read_text())
    assert line["id"] == case.id and line["value"] == case.value
    assert line["limit"] == case.limit


def test_a_secret_inside_a_model_name_leaves_its_case_id_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "Tok3n-xyz-42"
    monkeypatch.setenv("DEPLOY_TOKEN", secret)
    model = onnx.load_from_string(onnx_model("Relu"))
    prepared = prepare(model, f"net-{secret}", "net.onnx")
    case, specs = model_case(prepared, "rk3562", "float16")
    run_leaky(tmp_path, case, secret, specs)
    line = json.loads((tmp_path / "journal.jsonl").read_text())
    assert secret in line["id"] and secret in line["op"] and secret in line["artifacts"]


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("8192", ["only digits", "longer, mixed secret"]),
        ("hunter", ["short or plain"]),
        ("passwordpassword", ["short or plain"]),
        ("abc", ["shorter than 4 characters", "not redacted"]),
    ],
)
def test_a_short_or_plain_secret_is_named_at_the_start(
    value: str, words: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv("HIL_RK3562_PW", value)
    monkeypatch.setenv("API_TOKEN", "glpat-9f8e7d6c5b")  # long and mixed: no warning
    warn_weak_secrets()
    err = capsys.readouterr().err
    assert err.startswith("npu-hil: warning: HIL_RK3562_PW: ") and err.count("\n") == 1
    assert value not in err.split(": ", 2)[2].replace("digits", "")
    for word in words:
        assert word in err
