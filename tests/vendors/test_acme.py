"""A second vendor that can run cases, installed beside RKNN: the stub Acme X1 distribution
(tests/data/acme-vendor: package ``acme_npu``, one platform, three documented operators, an
onnxruntime stand-in simulator that gets Max wrong on purpose).

It is installed into a scratch folder with pip (``--no-deps --no-build-isolation --target``),
never into the shared environment, and child ``pytest`` and ``hil`` processes find it on
``PYTHONPATH``. With it installed, what this repository's runs collect does not change (the
repository pins rknn); ``--vendor acme`` runs and judges Acme's cases and bundles the failure;
where nothing pins a vendor, two that can run cases are a usage error.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers import paths

ROOT = paths.ROOT
SOURCE = paths.TESTS / "data" / "acme-vendor"
HIL = str(shutil.which("hil", path=str(Path(sys.executable).parent)))
COLLECTED = re.compile(r"^(\d+)(?:/(\d+))? tests? collected(?: \((\d+) deselected\))?", re.M)
# Acme's twin: a vendor claiming Acme's platform name too
TWIN = """\
import dataclasses

from acme_npu.vendor import VENDOR as ACME

VENDOR = dataclasses.replace(ACME, name="twin")
"""


@pytest.fixture(scope="module")
def acme_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder the acme-npu distribution is installed in, as pip installs it (built from a
    copy: a build writes into its source folder)."""
    scratch = tmp_path_factory.mktemp("acme")
    source, site = scratch / "source", scratch / "site"
    shutil.copytree(SOURCE, source)
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps"]
    command += ["--no-build-isolation", "--no-index", "--target", str(site), str(source)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (site / "acme_npu" / "acme-x1-operators.yaml").is_file()
    return site


def _env(*front: Path) -> dict[str, str]:
    path = [*map(str, front), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {key: value for key, value in os.environ.items() if key != "HIL_VENDOR"}
    return {**env, "PYTHONPATH": os.pathsep.join(path)}


def _run(
    command: list[str], env: dict[str, str], cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800, check=False
    )


def _pytest(env: dict[str, str], *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider"], env, cwd)


def _collected(done: subprocess.CompletedProcess[str]) -> tuple[str | None, ...]:
    """(selected, collected, deselected) of ``--collect-only -q``'s last line."""
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    found = COLLECTED.findall(done.stdout)
    assert found, done.stdout[-2000:]
    return found[-1]


def test_installing_acme_changes_nothing_this_repository_collects(acme_site: Path) -> None:
    for platform in ([], ["--platform", "all"]):
        args = ["suites", "--collect-only", "-q", *platform]
        without = _collected(_pytest(_env(), *args))
        with_acme = _collected(_pytest(_env(acme_site), *args))
        assert with_acme == without, platform
        assert int(without[0]) > 1000, without  # RKNN's cases, not Acme's few


def test_acme_runs_and_judges_its_cases_and_bundles_its_failure(
    acme_site: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    args = ["suites", "--vendor", "acme", "--platform", "ACME-X1", "-q"]
    store = tmp_path / "history.sqlite"
    done = _pytest(_env(acme_site), *args, "--results", str(results), "--hil-db", str(store))
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr  # Max's cases fail
    records = [json.loads(line) for line in (results / "journal.jsonl").read_text().splitlines()]
    assert {r["platform"] for r in records} == {"acme-x1"}
    # the run names its vendor: run.json, every record, the history store
    assert json.loads((results / "run.json").read_text())["vendor"] == "acme"
    assert {r["vendor"] for r in records} == {"acme"}
    case = "acme-x1/Mul/float16/typical"
    history = [HIL, "history", case, "--json", "--hil-db", str(store), "--vendor", "acme"]
    shown = _run(history, _env(acme_site))
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert '"vendor": "acme"' in shown.stdout, shown.stdout
    assert {r["op"] for r in records} == {"Hardmax", "Max", "Mul"}
    verdicts = {r["id"]: r["verdict"] for r in records}
    assert {v for i, v in verdicts.items() if "/Max/" in i} == {"wrong-result"}
    assert verdicts["acme-x1/Mul/float16/typical"] == "confirmed"
    assert verdicts["acme-x1/Hardmax/float16/typical"] == "confirmed"
    bundles = sorted(p for p in (results / "bundles").iterdir() if p.is_dir())
    assert bundles and all("Max" in p.name for p in bundles), bundles
    bundle = bundles[0]
    names = {p.name for p in bundle.iterdir()}
    assert {"model.onnx", "inputs", "reference", "observed", "case.json", "README.md"} <= names
    assert "reproduce.py" not in names  # Acme's recipe writes none
    readme = (bundle / "README.md").read_text()
    assert "The vendor's recipe writes no reproduce script. To rerun the case" in readme
    assert (bundle.parent / f"{bundle.name}.tar.gz").is_file()


def test_without_a_pin_two_vendors_that_run_cases_are_a_usage_error(
    acme_site: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere"  # no pyproject.toml here or above
    elsewhere.mkdir()
    (elsewhere / "test_nothing.py").write_text("def test_nothing() -> None:\n    pass\n")
    env = _env(acme_site)
    done = _pytest(env, "--collect-only", "-q", cwd=elsewhere)
    assert done.returncode == 4, done.stdout + done.stderr
    choose = (
        "2 installed vendors can run cases (acme, rknn): choose one with --vendor NAME (or "
        "HIL_VENDOR=NAME), or pin it in the project's pyproject.toml: [tool.npu-hil] vendor = "
        '"NAME"'
    )
    assert f"--vendor: {choose}" in done.stderr
    probe = _run([HIL, "probe", "--platform", "acme-x1"], env, elsewhere)
    assert probe.returncode == 2 and choose in probe.stderr, probe.stderr
    listed = _run([HIL, "vendors"], env, elsewhere)  # says so, and lists both
    assert listed.stdout.splitlines()[-1] == f"a run here: no vendor chosen: {choose}"
    chosen = _pytest({**env, "HIL_VENDOR": "acme"}, "--collect-only", "-q", cwd=elsewhere)
    assert chosen.returncode == 0, chosen.stdout + chosen.stderr
    near = _pytest(env, "--vendor", "acm", "--collect-only", "-q", cwd=elsewhere)
    assert near.returncode == 4
    assert "unknown vendor 'acm'; known: acme, horizon, houmo, rknn; did you mean acme?" in (
        near.stderr
    )


def test_a_platform_name_two_vendors_share_is_refused_never_chosen(
    acme_site: Path, tmp_path: Path
) -> None:
    twin = tmp_path / "twin"
    info = twin / "twin_npu-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: twin-npu\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[npu_hil.vendors]\ntwin = twinvendor:VENDOR\n")
    (twin / "twinvendor.py").write_text(TWIN)
    args = ["suites", "--vendor", "acme", "--platform", "acme-x1", "--collect-only", "-q"]
    done = _pytest(_env(twin, acme_site), *args)
    assert done.returncode == 4, done.stdout + done.stderr
    assert (
        "--platform: platform 'acme-x1' is a platform of vendors acme and twin: a platform name "
        "two vendors share is refused"
    ) in done.stderr
