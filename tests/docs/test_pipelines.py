"""docs/nightly.md's GitLab CI and GitHub Actions pipelines run as written: their script lines,
with the README's first selection as the pipeline's ``HIL_ARGS`` (a doc drift and two known
violations), and ``tox`` standing for the tox job it runs (``tests.helpers.tox_shim``; the
line installing tox is left out). The JUnit XML they write shows each verdict
where the CI systems' test views show a test's text, and each case's own time."""

from __future__ import annotations

import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.helpers import paths
from tests.helpers.marks import needs_toolkit
from tests.helpers.tox_shim import tox_env

ROOT = paths.ROOT
SECTION = "\n### In CI: GitLab CI and GitHub Actions\n"
SELECTION = "-m float16 -k Pow"  # the README's first run
INSTALLS_TOX = re.compile(r"pip install .*'tox")


def _pipelines() -> tuple[dict[str, Any], dict[str, Any]]:
    text = (ROOT / "docs" / "nightly.md").read_text(encoding="utf-8").split(SECTION, 1)[1]
    gitlab, github = re.findall(r"```yaml\n(.*?)\n```", text, re.S)[:2]
    return yaml.safe_load(gitlab), yaml.safe_load(github)


def _gitlab() -> tuple[dict[str, str], list[str]]:
    (job,) = _pipelines()[0].values()
    assert job["artifacts"]["reports"]["junit"] == f"{job['variables']['HIL_RESULTS']}/junit.xml"
    return job["variables"], job["script"]


def _github() -> tuple[dict[str, str], list[str]]:
    (job,) = _pipelines()[1]["jobs"].values()
    lines = [line for step in job["steps"] if "run" in step for line in step["run"].splitlines()]
    return job["env"], lines


@needs_toolkit
@pytest.mark.parametrize("pipeline", [_gitlab, _github], ids=["gitlab", "github"])
def test_the_pipeline_runs_and_its_junit_shows_the_verdicts(pipeline: Any, tmp_path: Path) -> None:
    variables, lines = pipeline()
    assert any(INSTALLS_TOX.search(line) for line in lines)  # as a fresh runner needs it
    script = "\n".join(["set -e", *(line for line in lines if not INSTALLS_TOX.search(line))])
    (tmp_path / "bin").mkdir()
    env = tox_env(tmp_path / "bin")
    results = tmp_path / "results"
    env.update({**variables, "HIL_ARGS": SELECTION, "HIL_RESULTS": str(results)})
    run = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    assert run.returncode == 0, run.stdout + run.stderr  # green: the violations are known
    cases = {
        str(case.get("name")): case for case in ET.parse(results / "junit.xml").iter("testcase")
    }
    assert len(cases) == 15

    def text(name: str) -> str:
        case = cases[f"test_documented_limit[rk3562/Pow/float16/{name}]"]
        skipped = case.find("skipped")
        return case.findtext("system-out") or (
            skipped.get("message", "") if skipped is not None else ""
        )

    assert text("exponent_dtype=double").startswith("doc-drift: ")
    assert text("values=0").startswith("violation (known issue")
    assert text("values=2").startswith("confirmed: ")
    for case in cases.values():
        own = {p.get("name"): p.get("value") for p in case.iter("property")}["duration_s"]
        assert 0 <= float(case.get("time", "")) - float(str(own)) < 0.5
