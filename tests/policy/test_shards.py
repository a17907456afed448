"""``--shard I/N`` and reading the shards of one run as one (``hil report``, ``hil diff``)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers import paths
from tests.helpers.paths import SUITE

from harness.cli import main
from harness.policy.shards import parse_shard, split
from harness.results.journal import read_records, read_run_metadata
from harness.results.runs import read_run

ROOT = paths.ROOT
# The typical Mul and MulRelu models of every platform: float16 is documented on some
# (RK3588) and outside on others (RV1106), so the shards hold several verdicts.
SELECTION = "Mul and typical"


def test_a_split_is_stable_complete_and_balanced() -> None:
    keys = [f"case{i:02d}" for i in range(10)]
    costs = {key: 2.0 for key in keys} | {"case03": 600.0}
    parts = split(keys, costs.__getitem__, 4)
    assert split(list(reversed(keys)), costs.__getitem__, 4) == parts  # not by order given
    assert sorted(key for part in parts for key in part) == keys  # each once
    assert parts[0] == ["case03"]  # the expensive case alone; the rest dealt out evenly
    assert sorted(len(part) for part in parts[1:]) == [3, 3, 3]


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "2", "a/b", "-1/4"])
def test_a_bad_shard_is_refused_with_the_text(text: str) -> None:
    with pytest.raises(ValueError, match=repr(text).replace("/", "/")):
        parse_shard(text)


def test_a_bad_shard_option_is_a_usage_error(tmp_path: Path) -> None:
    run = pytest_run(tmp_path, "r", "--shard", "5/4", "--collect-only")
    assert run.returncode == 4, run.stdout + run.stderr
    assert "--shard '5/4': I must be from 1 to N" in run.stderr


def pytest_run(tmp_path: Path, results: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        sys.executable,
        "-m",
        "pytest",
        str(SUITE),
        "-k",
        SELECTION,
        "-q",
        "--platform",
        "all",
    ]
    command += ["-p", "no:cacheprovider", "--backend", "sim", "--results", str(tmp_path / results)]
    command += [
        "--hil-cache",
        str(tmp_path / "sim"),
        "--hil-reference-cache",
        str(tmp_path / "ref"),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [*command, *args], cwd=tmp_path, capture_output=True, text=True, timeout=900, env=env
    )


def hil(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One unsharded run of the selection on every platform, then its four shards one after
    another."""
    if importlib.util.find_spec("rknn") is None:
        pytest.skip("rknn-toolkit2 is not installed")
    tmp = tmp_path_factory.mktemp("shards")
    for results, shard in [("whole", None), *((f"s{i}", f"{i}/4") for i in range(1, 5))]:
        run = pytest_run(tmp, results, *(["--shard", shard] if shard else []))
        assert run.returncode in (0, 1), run.stdout + run.stderr  # 1: the suite's violations
    return tmp


def shard_dirs(tmp: Path) -> list[str]:
    return [str(tmp / f"s{i}") for i in range(1, 5)]


def test_four_shards_merge_into_the_verdicts_of_the_unsharded_run(
    sharded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = {record.id: record.verdict for record in read_records(sharded / "whole")}
    parts = [
        [record.id for record in read_records(d, allow_empty=True)] for d in shard_dirs(sharded)
    ]
    assert all(parts) and sum(map(len, parts)) == len(whole) > 4  # disjoint, none empty
    metas = [read_run_metadata(d)["shard"] for d in shard_dirs(sharded)]
    assert [m["index"] for m in metas] == [1, 2, 3, 4]
    assert len({m["selection"] for m in metas}) == 1
    assert [m["cases"] for m in metas] == [len(part) for part in parts]
    merged = read_run(shard_dirs(sharded))
    assert {record.id: record.verdict for record in merged.records} == whole
    assert len({record.platform for record in merged.records}) == 11  # --platform all
    assert len(set(whole.values())) > 1
    code, out, err = hil(capsys, "report", *shard_dirs(sharded), "--output", str(sharded / "m"))
    assert code == 0, err
    report = (sharded / "m" / "report.md").read_text()
    assert "1, 2, 3, 4 of 4 merged" in report
    code, out, _ = hil(capsys, "report", str(sharded / "whole"))
    assert code == 0
    whole_report = (sharded / "whole" / "report.md").read_text()
    assert _counts(report) == _counts(whole_report)
    code, out, err = hil(capsys, "diff", str(sharded / "whole"), ",".join(shard_dirs(sharded)))
    assert code == 0, out + err  # no case differs
    assert "0 verdict changes" in out


def _counts(markdown: str) -> list[str]:
    """The verdict-count lines of a report."""
    return [
        line for line in markdown.splitlines() if line.startswith("| ") and "confirmed" in line
    ][:3]


def test_a_bundle_link_of_a_merged_report_leads_into_its_shard(
    sharded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = hil(capsys, "report", *shard_dirs(sharded), "--output", str(sharded / "m2"))
    assert code == 0, err
    html = (sharded / "m2" / "report.html").read_text()
    links = [part.split('"')[0] for part in html.split('href="../s')[1:]]
    assert links and all(
        (sharded / f"s{link}").exists() for link in links if link.endswith(".tar.gz")
    )


def test_directories_not_of_one_run_or_overlapping_are_refused(
    sharded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s1, s2 = shard_dirs(sharded)[:2]
    out = str(sharded / "bad")
    code, _, err = hil(capsys, "report", s1, s1, "--output", out)
    assert code == 2 and "given twice" in err
    code, _, err = hil(capsys, "report", s1, str(sharded / "whole"), "--output", out)
    assert code == 2 and "not a shard" in err and "whole" in err
    copy = sharded / "s1-copy"
    shutil.copytree(s1, copy, dirs_exist_ok=True)
    code, _, err = hil(capsys, "report", s1, s2, str(copy), "--output", out)
    assert code == 2 and "overlap: both hold shard 1/4" in err
    other = json.loads((Path(s2) / "run.json").read_text())
    other["shard"]["selection"] = "0123456789abcdef"
    (copy / "run.json").write_text(json.dumps(other))
    code, _, err = hil(capsys, "report", s1, str(copy), "--output", out)
    assert code == 2 and "are not shards of one run" in err
    code, _, err = hil(capsys, "report", s1, s2)
    assert code == 2 and "--output" in err
    code, _, err = hil(capsys, "diff", str(sharded / "whole"), f"{s1},{s1}")
    assert code == 2 and "given twice" in err
