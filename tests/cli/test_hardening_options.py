"""Bad option values stop a run up front with a usage error that names the option and value.

The plugin's options are checked by a real ``pytest suites/...`` process (exit 4, before any
collection); ``hil boards check --timeout`` by argparse (exit 2).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import pytest
from tests.helpers import paths
from tests.helpers.cli import assert_usage_error, run_pytest

from harness.cli import boards as cli

ROOT = paths.ROOT
BAD_TIMEOUTS = ["-1", "0", "nan", "inf", "1e9"]


@pytest.mark.parametrize("value", BAD_TIMEOUTS)
def test_bad_hil_timeout_is_a_usage_error(tmp_path: Path, value: str) -> None:
    run = run_pytest(tmp_path, f"--hil-timeout={value}", "--results", str(tmp_path / "r"))
    assert_usage_error(run, "--hil-timeout", f"{float(value):g}")


@pytest.mark.parametrize("kind", ["file", "under /proc", "empty"])
def test_bad_results_is_a_usage_error(tmp_path: Path, kind: str) -> None:
    (tmp_path / "afile").write_text("not a folder\n")
    value = {"file": "afile", "under /proc": "/proc/npu-hil-results", "empty": ""}[kind]
    run = run_pytest(tmp_path, f"--results={value}")
    assert_usage_error(run, "--results", repr(value))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]  # nothing written


@pytest.mark.parametrize("value", ["afile", "afile/sub", ""])
def test_bad_hil_cache_is_a_usage_error(tmp_path: Path, value: str) -> None:
    (tmp_path / "afile").write_text("not a folder\n")
    run = run_pytest(tmp_path, f"--hil-cache={value}", "--results", str(tmp_path / "r"))
    assert_usage_error(run, "--hil-cache", repr(value))


@pytest.mark.parametrize(
    ("variable", "option"),
    [
        ("HIL_CACHE", "--hil-cache"),
        ("HIL_REFERENCE_CACHE", "--hil-reference-cache"),
        ("HIL_COMPARISON_CACHE", "--hil-comparison-cache"),
        ("HIL_CASE_CACHE", "--hil-case-cache"),
    ],
)
@pytest.mark.parametrize("kind", ["a link to a system folder", "a personal folder"])
def test_a_cache_folder_not_the_caches_own_is_a_usage_error(
    tmp_path: Path, kind: str, variable: str, option: str
) -> None:
    system = tmp_path / "system"
    (system / "home" / "user").mkdir(parents=True)
    old = time.time() - 86400
    os.utime(system / "home" / "user", (old, old))
    cache = system
    if kind.startswith("a link"):
        cache = tmp_path / "link"
        cache.symlink_to(system)
    caps = {f"{variable}_MAX": "1K"}
    run = run_pytest(tmp_path, "--results", str(tmp_path / "r"), **{variable: str(cache)}, **caps)
    assert_usage_error(run, option, str(cache))
    assert (system / "home" / "user").is_dir()
    assert sorted(p.name for p in system.iterdir()) == ["home"]


@pytest.mark.parametrize(
    "variable",
    [
        "HIL_CACHE_MAX",
        "HIL_CONVERSION_CACHE_MAX",
        "HIL_REFERENCE_CACHE_MAX",
        "HIL_COMPARISON_CACHE_MAX",
        "HIL_CASE_CACHE_MAX",
    ],
)
def test_a_bad_cache_cap_is_a_usage_error(tmp_path: Path, variable: str) -> None:
    # --backend auto: the conversion cache is in use whenever a board may be
    args = ["--backend", "auto", "--results", str(tmp_path / "r")]
    run = run_pytest(tmp_path, *args, **{variable: "12X"})
    assert_usage_error(run, variable, "not a size: '12X'")


def test_unknown_platform_is_a_usage_error_before_collection(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, "--platform", "nope", "--results", str(tmp_path / "r"))
    assert_usage_error(run, "--platform", "nope", "rk3562")


def test_good_options_still_collect(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, "--hil-timeout=0.5", "--results", str(tmp_path / "r"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "collected" in run.stdout


@pytest.mark.parametrize("value", BAD_TIMEOUTS)
def test_bad_boards_check_timeout_is_an_argparse_error(
    tmp_path: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser(prog="hil")
    cli.register(parser.add_subparsers(dest="command", required=True))
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["boards", "check", "--boards", str(tmp_path), f"--timeout={value}"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "--timeout" in err and f"{float(value):g}" in err
