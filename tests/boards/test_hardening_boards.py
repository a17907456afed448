"""Hostile board files, known_hosts files, board output and environments: clear errors that
never show a secret, and no terminal escapes from a board in any output."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tests.fakes.sshd import SshServer, write_sysroot
from tests.helpers import paths
from tests.helpers.boards import board_doc, recipe, refused, write
from tests.helpers.cli import hil_boards
from tests.helpers.declared import MODELS

from harness.boards.discovery import check
from harness.boards.inventory import SCHEMA, Board, BoardFileError, load_board
from harness.cases.operators import operator_cases
from harness.pipeline import CaseExecutor, Stages
from harness.report import write_reports
from harness.report.bundle import make_bundle
from harness.report.markdown import render_markdown
from harness.report.matrix import build_report
from harness.targets.job import Job
from harness.targets.observation import Observation
from harness.text import printable, redact, redacted
from harness.vendors import Recipes, vendor_named
from harness.vendors.rknn.documents.operators import seed_catalogue
from harness.vendors.rknn.runtimes import RUNTIMES

REPO = paths.ROOT
SECRET = "hunter2-Secret!"
ESCAPES = "\x1b]0;owned\x07\x1b[2J\x1b[31m"  # set the window title, clear the screen, red


# -- 1: board-file errors name keys, never values ---------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"ssh_password": SECRET},
        {"pw": SECRET},
        {"pw": {"nested": [SECRET]}},
        {"host": {"pw": SECRET}},
        {"tags": [{"pw": SECRET}]},
        {"core_mask": {"pw": SECRET}},
        {"auth": {"key_file": "k", "token": SECRET}},
    ],
)
def test_a_schema_error_names_the_key_and_never_shows_an_unknown_value(
    tmp_path: Path, fields: dict[str, Any]
) -> None:
    error = refused(write(tmp_path, board_doc(**fields)))
    assert SECRET not in str(error) and SECRET not in repr(error.value)
    (key,) = fields
    assert key in str(error)


def test_an_invalid_board_file_under_pytest_is_a_usage_error_without_the_secret(
    tmp_path: Path,
) -> None:
    write(tmp_path / "boards", board_doc(platform="rk3562", soc="rk3562", ssh_password=SECRET))
    (tmp_path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    run = pytest_run(tmp_path, "--boards", str(tmp_path / "boards"))
    output = run.stdout + run.stderr
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, output
    assert "INTERNALERROR" not in output and "Traceback" not in output
    assert "ssh_password" in output and str(tmp_path / "boards") in output
    assert SECRET not in output


def pytest_run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest in ``folder`` with this checkout's harness (not whichever one is installed)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args]
    command += ["--results", str(folder / "results"), "test_nothing.py"]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300, env=env)


# -- 3: one redactor, which knows the boards' password variables ------------------------------


class LeakyTarget:
    """A backend whose log and error repeat the passwords it was given, as a careless tool
    might."""

    observes: frozenset[str] = frozenset()

    def __init__(self, secrets: list[str]) -> None:
        self.secrets = secrets

    def run(self, job: Job) -> Observation:
        text = " ".join(f"password={secret}" for secret in self.secrets)
        return Observation("leaky", infra_error=f"login failed: {text}", log=f"log: {text}\n")


def test_passwords_the_run_was_given_leave_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HIL_RK3588_PW is the README's example; BOARD_LOGIN only a board file's password_env
    says is a secret."""
    readme, named = "rk3588-Pass-1", "board-login-2"
    monkeypatch.setenv("HIL_RK3588_PW", readme)
    monkeypatch.setenv("BOARD_LOGIN", named)
    load_board(
        write(tmp_path / "boards", board_doc(auth={"password_env": "BOARD_LOGIN"})), RUNTIMES
    )
    results = tmp_path / "results"
    case = operator_cases(seed_catalogue(), MODELS).cases[0]
    record = CaseExecutor(results, LeakyTarget([readme, named]), Stages(recipe=recipe)).execute(
        case
    )
    assert record.verdict == "infra-error", record.detail
    case_dir = results / record.artifacts
    planted = case_dir / "dataset.txt"  # tests the bundle's scrubbing on its own
    planted.write_text(f"{readme} {named}\n")
    rknn = Recipes(vendor_named("rknn"))
    make_bundle(results, record.id, regenerate=rknn)  # the vendor's recipe, as hil does
    write_reports(results)
    written = [path for path in results.rglob("*") if path.is_file() and path != planted]
    assert {"build.log", "journal.jsonl", "report.md", "dataset.txt"} <= {p.name for p in written}
    for path in written:
        if path.suffix not in (".npy", ".onnx", ".gz"):
            text = path.read_text(encoding="utf-8")
            assert readme not in text and named not in text, path
    assert "<redacted>" in (case_dir / "build.log").read_text()
    # The record handed back (pytest messages, JUnit properties) is the redacted one too.
    assert readme not in json.dumps(record.to_json()) and named not in record.detail


def test_the_redactor_spares_the_working_directory_and_short_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PWD", "/home/hil/work")
    monkeypatch.setenv("OLDPWD", "/home/hil")
    monkeypatch.setenv("API_TOKEN", "abc")  # too short to redact without garbling text
    monkeypatch.setenv("GITLAB_TOKEN", "glpat-123456")
    text = "cd /home/hil/work; abc; push with glpat-123456"
    assert redact(text) == "cd /home/hil/work; abc; push with <redacted>"
    assert redacted({"glpat-123456": ["glpat-123456", 1]}) == {"<redacted>": ["<redacted>", 1]}


def test_printable_keeps_lines_and_tabs_and_drops_every_escape() -> None:
    text = "a\tb\n\x1b[1;31mred\x1b[0m \x1b]8;;http://x\x1b\\link\x1b]8;;\x07 \u202eevil\x00\x9b2J"
    assert printable(text) == "a\tb\nred link evil"


# -- 4: terminal escapes from a board -------------------------------------------------------


def escaping_board(sshd: SshServer, tmp_path: Path) -> Path:
    """A boards folder whose one board's NPU driver version carries terminal escapes."""
    root = write_sysroot(tmp_path / "sysroot")
    (root / "sys/kernel/debug/rknpu/version").write_text(f"{ESCAPES}RKNPU driver build\x1b[0m\n")
    folder = tmp_path / "boards"
    sshd.board_file(folder, sysroot=str(root))
    return folder


def test_board_text_reaches_the_terminal_without_escapes(
    sshd: SshServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = escaping_board(sshd, tmp_path)
    assert hil_boards(["check", "--boards", str(folder)]) == 0
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err and "\x07" not in out + err
    assert "RKNPU driver build" in out


def test_board_text_reaches_report_md_without_escapes(sshd: SshServer, tmp_path: Path) -> None:
    folder = escaping_board(sshd, tmp_path)
    (board_file,) = folder.glob("*.yaml")
    facts = check(load_board(board_file, RUNTIMES))
    assert facts["status"] == "ok" and "\x1b" not in json.dumps(facts, ensure_ascii=False)
    facts["npu_driver"] = f"{ESCAPES}RKNPU driver build"  # as an older run.json may hold it
    text = render_markdown(build_report([], {"platform": "rk3562", "boards": [facts]}, {}))
    assert "RKNPU driver build" in text and "\x1b" not in text and "\x07" not in text


# -- 5: tracebacks instead of errors --------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [b"127.0.0.1 ssh-ed25519 not-base64!!\n", b"\xff\xfe\x00binary\x9c\n"],
    ids=["malformed-line", "binary"],
)
def test_a_bad_known_hosts_file_makes_the_board_unreachable_naming_the_file(
    loopback_board: Board, content: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    loopback_board.transport.known_hosts.write_bytes(content)
    report = check(loopback_board, timeout=5)
    assert report["status"] == "unreachable", report
    (problem,) = report["problems"]
    assert str(loopback_board.transport.known_hosts) in problem and "known_hosts" in problem
    assert "not-base64" not in problem


def test_a_binary_board_file_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "board.yaml"
    path.write_bytes(b"name: \xff\xfe\x00\x9c\n")
    assert "UTF-8" in str(refused(path))


def test_a_date_yaml_cannot_construct_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "board.yaml"
    path.write_text("name: 2024-13-45\n")
    assert "not valid YAML" in str(refused(path))


def test_a_home_that_does_not_exist_is_refused_naming_the_key(tmp_path: Path) -> None:
    error = refused(write(tmp_path, board_doc(known_hosts="~no-such-user-npu-hil/kh")))
    assert error.key_path == "known_hosts"


# -- fuzzing the board-file loader ---------------------------------------------------------

_TOP = set(SCHEMA["properties"]) | {k for kind in RUNTIMES.values() for k in kind.keys}
_SHOWN_AUTH = {"key_file", "agent"}
_plain = st.text(max_size=12).filter(lambda s: "SECRET" not in s)
_scalars = st.none() | st.booleans() | st.integers() | st.floats() | _plain
_secret = st.text(max_size=8).map(lambda s: f"SECRET-{s}")
_hidden = st.recursive(
    _secret | st.integers(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_plain, inner, max_size=3),
    max_leaves=6,
)
_password_env = st.from_regex(r"SECRET_[A-Z0-9_]{1,8}", fullmatch=True) | _secret
_auth = st.fixed_dictionaries(
    {},
    optional={
        "key_file": _scalars,
        "agent": _scalars,
        "password_env": _password_env,
        "pw": _hidden,
    },
)
_known = st.dictionaries(
    st.sampled_from(sorted(_TOP - {"auth"})), _scalars | st.lists(_plain, max_size=2) | _hidden
)
_unknown = st.dictionaries(_plain.filter(lambda k: k not in _TOP), _hidden, max_size=3)


def _must_not_show(document: object) -> list[str]:
    """Strings a loader error may not contain: all but scalar values of schema keys (and
    tags' items, and auth's key_file); every password_env value."""
    hidden: list[str] = []

    def leaves(node: object) -> None:
        if isinstance(node, str):
            hidden.append(node)
        elif isinstance(node, dict):
            for value in node.values():
                leaves(value)
        elif isinstance(node, list):
            for item in node:
                leaves(item)

    if not isinstance(document, dict):
        leaves(document)
        return hidden
    for key, value in document.items():
        if key == "auth" and isinstance(value, dict):
            leaves({k: v for k, v in value.items() if k not in _SHOWN_AUTH})
        elif key == "tags" and isinstance(value, list):
            leaves([item for item in value if not isinstance(item, str)])
        elif key not in _TOP or isinstance(value, dict | list):
            leaves(value)
    return [text for text in hidden if text.startswith("SECRET")]


def _may_show(document: object) -> list[str]:
    """The strings a loader error may show: scalar values of schema keys, tags' items and
    auth's key_file and agent."""
    if not isinstance(document, dict):
        return []
    shown = [v for k, v in document.items() if k in _TOP and k != "auth" and isinstance(v, str)]
    tags, auth = document.get("tags"), document.get("auth")
    if isinstance(tags, list):
        shown += [item for item in tags if isinstance(item, str)]
    if isinstance(auth, dict):
        shown += [v for k, v in auth.items() if k in _SHOWN_AUTH and isinstance(v, str)]
    return shown


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(known=_known, unknown=_unknown, auth=_auth, base=st.booleans())
# a password_env drawn as the same text as the adb address the error shows
@example(known={"adb": "SECRET-"}, unknown={}, auth={"password_env": "SECRET-"}, base=True)
def test_fuzzed_board_documents_fail_only_with_board_file_errors_that_hide_secrets(
    tmp_path_factory: pytest.TempPathFactory,
    known: dict[str, Any],
    unknown: dict[str, Any],
    auth: dict[str, Any],
    base: bool,
) -> None:
    document = {**(board_doc() if base else {}), **known, **unknown, "auth": auth}
    path = tmp_path_factory.mktemp("fuzz") / "board.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True))
    try:
        load_board(path, RUNTIMES)
    except BoardFileError as error:
        message = str(error)
        shown = _may_show(document)
        for secret in _must_not_show(document):
            # a secret drawn as part of a text the message may show cannot be told from it
            if not any(secret in text for text in shown):
                assert secret not in message


@FUZZ
@given(content=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_fuzzed_board_file_bytes_fail_only_with_board_file_errors(
    tmp_path_factory: pytest.TempPathFactory, content: bytes
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "board.yaml"
    path.write_bytes(content)
    with contextlib.suppress(BoardFileError):
        load_board(path, RUNTIMES)
