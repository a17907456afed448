"""A known-issues file is data, never code: YAML aliases, glob patterns, huge values and
special files cannot make loading or matching blow up, and ``hil known-issues init`` writes
literal ids that match only themselves.

Loading and matching a hostile file runs in a child process with a memory and time limit, so
that a regression fails the test instead of taking the machine down.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from test_nightly import POW_0_ENTRY, _record, known_file

from harness.cli import main
from harness.nightly.known_issues import (
    KnownIssuesError,
    escape_glob,
    glob_match,
    load_known_issues,
)
from harness.results.journal import Journal

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from harness.nightly.known_issues import KnownIssuesError, load_known_issues
try:
    known = load_known_issues(sys.argv[1])
except KnownIssuesError as error:
    print("refused:", error)
    sys.exit(0)
for case_id in sys.argv[2:]:
    print(case_id, known.entry_for(__import__("test_nightly")._record(case_id, "violation")))
"""


def load_in_child(path: Path, *case_ids: str) -> str:
    """What loading ``path`` (and matching ``case_ids``) prints, within 1 GiB and 60 s."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}"}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), *case_ids],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def billion_laughs() -> str:
    """Nine levels of nine aliases: about 500 bytes that expand to 9**9 strings."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, 9):
        name, previous = chr(ord("a") + level), chr(ord("a") + level - 1)
        lines.append(f"{name}: &{name} [{','.join([f'*{previous}'] * 9)}]")
    entry = "{cases: ['x'], verdict: violation, reference: R, note: *i}"
    return "\n".join(["laughs:", *(f"  {line}" for line in lines), f"known_issues: [{entry}]"])


def test_a_billion_laughs_file_is_refused_at_its_first_alias(tmp_path: Path) -> None:
    path = tmp_path / "known.yaml"
    path.write_text(billion_laughs())
    assert path.stat().st_size < 600
    out = load_in_child(path)
    assert out.startswith(f"refused: {path}: not valid YAML at line ")
    assert "aliases (*name) expand it beyond 1000000 values" in out and len(out) < 500


def test_aliases_of_moderate_use_still_load(tmp_path: Path) -> None:
    shared = {"rknn_toolkit2": ["2.5.*"]}  # written once, aliased by the second entry
    path = known_file(tmp_path, [{**POW_0_ENTRY, "versions": shared}] * 2)
    assert "*id" in path.read_text()
    assert [dict(e.versions) for e in load_known_issues(path).entries] == [
        {"rknn_toolkit2": ("2.5.*",)}
    ] * 2
    (tmp_path / "cycle.yaml").write_text("known_issues: &a [*a]\n")
    with pytest.raises(KnownIssuesError, match=r"an alias \(\*name\) inside the value it names"):
        load_known_issues(tmp_path / "cycle.yaml")


def test_a_glob_of_many_stars_matches_without_backtracking(tmp_path: Path) -> None:
    glob = "*?" * 12 + "a"  # 37 s per id with a backtracking regex
    path = known_file(tmp_path, [{**POW_0_ENTRY, "cases": [glob], "versions": {}}][:1])
    path.write_text(path.read_text().replace("versions: {}\n", ""))
    ids = [f"rk3562/Pow/float16/values={'b' * n}" for n in range(30, 40)]
    out = load_in_child(path, *ids, "rk3562/Pow/float16/values=a")
    assert out.count(" None\n") == len(ids)
    assert out.splitlines()[-1].startswith("rk3562/Pow/float16/values=a Entry(")


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "known.yaml"
    os.mkfifo(fifo)
    assert load_in_child(fifo) == f"refused: {fifo}: not a regular file\n"


def test_a_file_larger_than_any_known_issues_file_is_refused(tmp_path: Path) -> None:
    path = known_file(tmp_path, [{**POW_0_ENTRY, "note": "n" * (2 * 1024**2)}])
    with pytest.raises(KnownIssuesError, match="larger than a known-issues file may be"):
        load_known_issues(path)


@pytest.mark.parametrize(
    "entry",
    [
        {**POW_0_ENTRY, "k" * 200_000: 1},  # additionalProperties quotes the key
        {**POW_0_ENTRY, "verdict": "v" * 200_000},  # enum quotes the value
        {**POW_0_ENTRY, "cases": [["x" * 1000] * 200]},  # type quotes the value
    ],
)
def test_an_error_message_never_quotes_a_huge_value(
    tmp_path: Path, entry: dict[str, object]
) -> None:
    path = known_file(tmp_path, [entry])
    with pytest.raises(KnownIssuesError) as error:
        load_known_issues(path)
    message = str(error.value)
    assert message.startswith(f"{path}: field 'known_issues[0]") and len(message) < 600


def reference_match(glob: str, text: str) -> bool:
    """The documented meaning, by a regex (fine for short inputs)."""
    pattern = ""
    chars = iter(glob)
    for char in chars:
        if char == "\\":
            pattern += re.escape(next(chars, "\\"))
        else:
            pattern += {"*": ".*", "?": "."}.get(char, re.escape(char))
    return re.fullmatch(pattern, text, re.DOTALL) is not None


@given(st.text("ab*?\\", max_size=8), st.text("ab*?\\", max_size=8))
def test_the_glob_matcher_means_what_the_schema_documents(glob: str, text: str) -> None:
    assert glob_match(glob, text) == reference_match(glob, text)


@given(st.text(max_size=20), st.text(max_size=3))
def test_an_escaped_id_matches_itself_only(text: str, more: str) -> None:
    assert glob_match(escape_glob(text), text)
    assert glob_match(escape_glob(text), text + more) == (more == "")


def test_init_writes_literal_ids_that_excuse_no_other_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    literal = "rk3562/model/net*.onnx/float16"
    for case_id in (literal, "rk3562/model/what?/float16"):
        Journal(tmp_path / "results").append(_record(case_id, "violation"))
    output = tmp_path / "known.yaml"
    assert main(["known-issues", "init", str(tmp_path / "results"), "-o", str(output)]) == 0
    capsys.readouterr()
    (entry,) = yaml.safe_load(output.read_text())["known_issues"]
    assert entry["cases"] == ["rk3562/model/net\\*.onnx/float16", "rk3562/model/what\\?/float16"]
    known = load_known_issues(output)
    assert known.entry_for(_record(literal, "violation")) is not None
    assert known.entry_for(_record("rk3562/model/what?/float16", "violation")) is not None
    for other in ("rk3562/model/net_production_model.onnx/float16", "rk3562/model/what!/float16"):
        assert known.entry_for(_record(other, "violation")) is None


def test_a_refresh_keeps_the_readings_of_causes_that_still_fail_as_recorded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = Journal(tmp_path / "results")
    pow_0 = _record("rk3562/Pow/float16/values=0", "violation", rknn_toolkit2="2.5.0")
    wrong = _record("rk3562/Pow/float16/values=3", "wrong-result", rknn_toolkit2="2.5.0")
    for record in (pow_0, wrong):
        journal.append(record)
    changed = {**POW_0_ENTRY, "cases": [wrong.id], "reference": "RKNN-9", "note": "was a violation"}
    readings = known_file(tmp_path, [POW_0_ENTRY, changed])
    output = tmp_path / "refreshed.yaml"
    init = ["known-issues", "init", str(tmp_path / "results"), "-o", str(output)]
    assert main([*init, "--readings", str(readings)]) == 0
    capsys.readouterr()
    refreshed = {entry.cases: entry for entry in load_known_issues(output).entries}
    kept = refreshed[(escape_glob(pow_0.id),)]
    assert (kept.reference, kept.note) == (POW_0_ENTRY["reference"], POW_0_ENTRY["note"])
    afresh = refreshed[(escape_glob(wrong.id),)]  # recorded as a violation: judged afresh
    assert afresh.verdict == "wrong-result" and afresh.reference.startswith("unreported")
    assert main([*init, "--force", "--readings", str(tmp_path / "none.yaml")]) == 2
    assert "none.yaml" in capsys.readouterr().err
