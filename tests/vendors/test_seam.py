"""The vendor seam from the outside: the registry, the run's defaults, Horizon and Houmo.

Horizon J6 and Houmo TCIM are vendors without a simulator or board target: ``hil docs show``
reads their rules, their suites check the rules against the documents' worked examples on the
host and journal the checks, and the report lists the documented rows they cited.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers import paths

from harness.cli import main
from harness.safe_yaml import DataFileError
from harness.vendors import fill_run_defaults, run_platform, run_vendor, vendor_named
from harness.vendors.rules import load_rules

ROOT = paths.ROOT
HIL = str(shutil.which("hil", path=str(Path(sys.executable).parent)))
HORIZON_RULES = ROOT / "harness" / "vendors" / "horizon" / "data" / "stride-rules.yaml"


def _env(*front: Path) -> dict[str, str]:
    path = [*map(str, front), str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


def _run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _options(platform: str | None) -> argparse.Namespace:
    return argparse.Namespace(platform=platform, hil_cache=None, hil_conversion_cache=None)


def test_a_runs_defaults_are_its_vendors() -> None:
    rknn = vendor_named("rknn")
    assert rknn.simulator_cache is not None and rknn.conversion_cache is not None
    options = _options(None)  # no --platform: the vendor's default platform and caches
    fill_run_defaults(options, rknn)
    assert options.platform == rknn.default_platform
    assert options.hil_cache == str(rknn.simulator_cache.directory())
    assert options.hil_conversion_cache == str(rknn.conversion_cache.directory())
    options = _options("J6E,J6M")  # a vendor with no caches: none
    fill_run_defaults(options, vendor_named("horizon"))
    assert (options.platform, options.hil_cache, options.hil_conversion_cache) == (
        "J6E,J6M",
        "off",
        "off",
    )
    given = argparse.Namespace(platform="tcim", hil_cache="/tmp/mine", hil_conversion_cache=None)
    fill_run_defaults(given, vendor_named("houmo"))  # what was given stays
    assert (given.platform, given.hil_cache, given.hil_conversion_cache) == (
        "tcim",
        "/tmp/mine",
        "off",
    )


def test_a_platform_is_looked_up_within_the_runs_vendor_in_any_case() -> None:
    horizon, rknn = vendor_named("horizon"), vendor_named("rknn")
    assert run_platform(horizon, "j6h") == "J6H"
    assert run_platform(vendor_named("houmo"), "tcim") == "TCIM"
    assert run_platform(rknn, "RK3588") == "rk3588"
    assert run_platform(rknn, "ALL", allow_all=True) == "all"
    with pytest.raises(LookupError) as other:  # another vendor's: never chosen, named
        run_platform(rknn, "J6H")
    assert str(other.value) == (
        f"platform 'J6H' is vendor horizon's, not this run's vendor rknn's (known: "
        f"{', '.join(sorted(rknn.platforms))} (vendor rknn's)); give --vendor horizon"
    )
    unknown = r"unknown platform 'j7'; known: J6B, .* \(vendor horizon's\)"
    with pytest.raises(LookupError, match=unknown):
        run_platform(horizon, "j7")


def test_the_repository_pins_rknn_and_an_unknown_vendor_names_the_nearest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HIL_VENDOR", raising=False)
    assert run_vendor(None, ROOT / "suites").name == "rknn"  # the pin in pyproject.toml
    assert run_vendor("horizon", ROOT).name == "horizon"  # --vendor first
    monkeypatch.setenv("HIL_VENDOR", "houmo")
    assert run_vendor(None, ROOT).name == "houmo"  # then HIL_VENDOR
    with pytest.raises(LookupError) as unknown:
        run_vendor("rknm", ROOT)
    assert str(unknown.value) == (
        "unknown vendor 'rknm'; known: horizon, houmo, rknn; did you mean rknn?"
    )
    monkeypatch.delenv("HIL_VENDOR")
    (tmp_path / "pyproject.toml").write_text('[tool.npu-hil]\nvendor = "acme"\n')
    with pytest.raises(LookupError) as pinned:
        run_vendor(None, tmp_path / "below")  # found from a folder below it
    assert str(pinned.value).startswith(
        f"{tmp_path / 'pyproject.toml'}: [tool.npu-hil] vendor: unknown vendor 'acme'; known: "
    )
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'other'\n")
    assert run_vendor(None, tmp_path).name == "rknn"  # no pin: the one runnable vendor


def test_hil_docs_show_answers_for_a_j6_platform(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["docs", "show", "stride", "--vendor", "horizon", "--platform", "J6H"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("stride: Horizon J6 input stride rules seed 000 § stride (J6H/P, S6P)\n")
    assert "reading: stride[0] and stride[1] (bytes) of Y and UV inputs: multiples of 64" in out
    assert "| Make sure the filled value satisfies $stride[idx] >= stride[idx+1] *" in out
    assert main(["docs", "show", "stride", "--vendor", "horizon", "--platform", "J6B"]) == 0
    assert "multiples of 32" in capsys.readouterr().out


def test_hil_vendors_lists_each_vendor_and_one_it_cannot_load(tmp_path: Path) -> None:
    """A registered vendor whose package needs what is not installed: listed with the reason,
    and named in a run's header; the others work as before."""
    site = tmp_path / "site"
    info = site / "ghost-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ghost\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[npu_hil.vendors]\nghost = ghostvendor:VENDOR\n")
    (site / "ghostvendor.py").write_text("import ghost_toolkit_not_installed\n")
    env = _env(site)
    done = _run([HIL, "vendors"], env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[2].startswith("rknn: rk3562, ")  # by name
    assert "horizon: J6E, J6M, J6B, J6H, J6P, S6P (no simulator, no board target)" in lines
    assert "houmo: TCIM (no simulator, no board target)" in lines
    reason = "cannot be loaded: No module named 'ghost_toolkit_not_installed'"
    assert f"ghost: unavailable ({reason})" in lines
    assert lines[-1] == f"a run here: vendor rknn (pinned by {ROOT / 'pyproject.toml'})"
    header = _run(
        [
            sys.executable,
            "-m",
            "pytest",
            "suites",
            "--collect-only",
            "--vendor",
            "horizon",
            "--platform",
            "J6E",
            "-p",
            "no:cacheprovider",
            "--results",
            str(tmp_path / "r"),
        ],
        env,
    )
    assert header.returncode == 0, header.stdout + header.stderr
    assert f"npu-hil: vendor ghost unavailable: {reason}" in header.stdout


def test_the_layout_suites_journal_their_checks_and_the_report_lists_the_rows(
    tmp_path: Path,
) -> None:
    results = tmp_path / "results"
    command = [sys.executable, "-m", "pytest", "suites", "--vendor", "horizon", "-q"]
    done = _run([*command, "-p", "no:cacheprovider", "--results", str(results)], _env())
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout
    records = [json.loads(line) for line in (results / "journal.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in records) == [
        "J6E/stride/input_roi",
        "J6E/stride/input_uv",
        "J6E/stride/input_y",
    ]
    assert {(r["backend"], r["verdict"], r["vendor"]) for r in records} == {
        ("host", "confirmed", "horizon")
    }
    y = next(r for r in records if r["id"] == "J6E/stride/input_y")
    assert {
        "prop": "stride",
        "documented": "[49280, 224, 1, 1]",
        "status": "confirmed",
    }.items() <= y["checks"][0].items()
    meta = json.loads((results / "run.json").read_text())
    assert meta["vendor"] == "horizon"
    [group] = meta["documented_rows"]
    assert (group["group"], len(group["rows"])) == ("J6E/M/B", 3)
    report = _run([HIL, "report", str(results)], _env())
    assert report.returncode == 0, report.stderr
    text = (results / "report.md").read_text()
    assert "## Horizon J6 input stride rules: J6E/M/B on host" in text
    assert text.count("| **confirmed** |") >= 3  # every rule checked, each confirmed


def test_a_rules_file_with_an_unknown_kind_names_file_field_and_value(tmp_path: Path) -> None:
    bad = tmp_path / "rules.yaml"
    bad.write_text(HORIZON_RULES.read_text().replace("kind: multiple-of", "kind: aligned", 1))
    with pytest.raises(DataFileError) as caught:
        load_rules(bad)
    assert str(caught.value) == (
        f"{bad}: rules[1].kind: is not a kind of documented limit (value: 'aligned')"
    )
