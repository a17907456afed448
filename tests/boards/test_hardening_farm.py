"""What a labgrid coordinator, its exporters and this host's lease marks hand the harness is
checked like a file's contents: place names that would move a work directory or carry
terminal escapes, NetworkService parameters that are not an address, port and user, lease
marks that are not marks, and a ``--lg-wait`` that is not a number of seconds."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.fakes.sshd import SshServer
from tests.helpers import paths

from harness.boards.farm import PlaceError, leased_board, network_service, place_name
from harness.boards.inventory import Board, load_board
from harness.boards.leases import LEASE_DIR_ENV, MAX_MARK_BYTES, Mark, marks
from harness.plugin.boards import pytest_report_header
from harness.targets.selection import Assignment, assigned_board
from harness.vendors.rknn.runtimes import RUNTIMES

ROOT = paths.ROOT
SERVICE = {"address": "127.0.0.1", "port": 2222, "username": "hil"}


def show(name: str, params: object) -> str:
    """``labgrid-client -p PLACE show`` of an acquired place with one NetworkService."""
    resource = {"acquired": name, "avail": True, "cls": "NetworkService", "params": params}
    return (
        f"Place '{name}':\n  tags: soc=rk3562\n  acquired: host/user\n"
        f"Acquired resource 'NetworkService' (exp/{name}/NetworkService/NetworkService):\n"
        f"  {resource!r}\n"
    )


def farm_board(tmp_path: Path, sshd: SshServer) -> Board:
    """A farm board file whose workdir holds the place's name."""
    path = sshd.board_file(tmp_path / "boards", workdir=str(tmp_path / "work" / "{place}"))
    document = yaml.safe_load(path.read_text())
    for key in ("host", "port", "user"):
        del document[key]
    document["labgrid"] = {"coordinator": "127.0.0.1:1", "place": "any"}
    path.write_text(yaml.safe_dump(document))
    return load_board(path, RUNTIMES)


@pytest.mark.parametrize(
    "name", ["../../outside", "..", "a/../../b", "/etc", "\x1b[31mred", "a\nb", "", ".hidden"]
)
def test_a_place_name_that_is_not_a_folder_name_is_refused(
    name: str, tmp_path: Path, sshd: SshServer
) -> None:
    with pytest.raises(PlaceError) as info:
        network_service(show(name, SERVICE))
    assert "\x1b" not in str(info.value) and "\n" not in str(info.value)
    # the same from a worker's assignment: a coordinator's name never becomes a path
    board = farm_board(tmp_path, sshd)
    place = {"name": name, "service": SERVICE, "token": "T0"}
    with pytest.raises(PlaceError):
        assigned_board([board], Assignment(board.name, "", place))
    assert not (tmp_path / "outside").exists()


def test_a_good_place_names_its_own_folder_under_the_board_files_work_dir(
    tmp_path: Path, sshd: SshServer
) -> None:
    board = farm_board(tmp_path, sshd)
    leased = leased_board(board, *network_service(show("rk3562-a", SERVICE)))
    assert leased.workdir == str(tmp_path / "work" / "rk3562-a")
    assert (leased.transport.host, leased.transport.port) == ("127.0.0.1", 2222)  # type: ignore[union-attr]


def test_the_running_on_line_carries_no_escape_from_a_board_or_place(tmp_path: Path) -> None:
    from harness.plugin.boards import ASSIGNMENTS

    assignments = {"rk3562": [Assignment(None, "board \x1b]0;owned\x07x down")]}
    config = SimpleNamespace(stash={ASSIGNMENTS: assignments})
    (line,) = pytest_report_header(config)  # type: ignore[arg-type]
    assert "\x1b" not in line and "\x07" not in line and "board" in line


@pytest.mark.parametrize("value", ["nan", "inf", "-5", "0"])
def test_an_lg_wait_that_is_not_seconds_is_a_usage_error(tmp_path: Path, value: str) -> None:
    suite = ROOT / "suites" / "test_operators.py"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", str(suite), "-p", "no:cacheprovider", "--lg-place",
         "a", f"--lg-wait={value}", "--boards", str(tmp_path), "--results",
         str(tmp_path / "results"), "--collect-only", "-q"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 4, run.stdout + run.stderr
    assert f"--lg-wait {float(value):g}: a timeout must be a finite number" in run.stderr


# -- property tests: whatever a coordinator prints, the parser says PlaceError or gives
# -- checked values ---------------------------------------------------------------------------

_TEXT = st.text(st.characters(codec="utf-8"), max_size=40)
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), _TEXT, st.binary())
_PARAMS = st.one_of(
    _SCALAR,
    st.dictionaries(st.sampled_from(["address", "port", "username", "password"]), _SCALAR),
)


@settings(max_examples=300, deadline=None)
@given(name=_TEXT, params=_PARAMS)
def test_any_place_and_network_service_parse_to_checked_values_or_a_place_error(
    name: str, params: object
) -> None:
    try:
        place, service = network_service(show(name, params))
    except PlaceError as exc:
        assert "\x1b" not in str(exc)
        return
    assert place == place_name(place) and "/" not in place and ".." not in place
    assert set(service) == {"address", "port", "username"}  # never the password
    assert isinstance(service["port"], int) and 0 < service["port"] < 65536
    assert all(c.isprintable() and not c.isspace() for c in service["address"])
    assert all(c.isprintable() and not c.isspace() for c in service["username"])


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=400))
def test_any_show_output_is_a_place_error_or_a_service(text: str) -> None:
    try:
        place, service = network_service(text)
    except PlaceError:
        return
    assert place_name(place) == place and set(service) == {"address", "port", "username"}


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    content=st.one_of(
        st.binary(max_size=200),
        st.builds(
            lambda data: json.dumps(data).encode(),
            st.dictionaries(
                st.sampled_from(["coordinator", "token", "place", "holders"]),
                st.one_of(
                    _SCALAR.filter(lambda v: not isinstance(v, bytes)),
                    st.lists(st.dictionaries(st.sampled_from(["pid", "started"]), st.integers())),
                ),
            ),
        ),
    )
)
def test_any_lease_mark_file_is_a_mark_or_ignored(
    content: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LEASE_DIR_ENV, str(tmp_path / "marks"))
    (tmp_path / "marks").mkdir(exist_ok=True)
    (tmp_path / "marks" / "TOKEN1.json").write_bytes(content)
    for mark in marks():  # never raises: a file that is not a mark is left alone
        assert isinstance(mark, Mark) and mark.token == "TOKEN1"
        assert mark.coordinator is None or isinstance(mark.coordinator, str)
        assert isinstance(mark.stale, bool)


def test_a_mark_of_a_live_process_is_not_stale_and_of_a_gone_one_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.boards.leases import process_identity

    monkeypatch.setenv(LEASE_DIR_ENV, str(tmp_path))
    me = process_identity(__import__("os").getpid())
    assert me is not None
    live = Mark("127.0.0.1:1", "LIVE", "a", [me])
    recycled = Mark("127.0.0.1:1", "RECYCLED", "a", [{**me, "started": me["started"] - 1}])
    assert not live.stale and recycled.stale
    assert math.isfinite(me["started"])


def release_stale_run(marks_folder: Path) -> subprocess.CompletedProcess[str]:
    """``hil boards release-stale`` over ``marks_folder``, as CI's clean-up step runs it."""
    hil = Path(sys.executable).with_name("hil")
    env = {**os.environ, "PYTHONPATH": str(ROOT), LEASE_DIR_ENV: str(marks_folder)}
    # a bound on a hang (a FIFO read waits for a writer forever), not a measurement
    return subprocess.run(
        [str(hil), "boards", "release-stale"], capture_output=True, text=True, timeout=60, env=env
    )


def gone_mark(token: str, **fields: object) -> dict[str, object]:
    """A mark whose one holder is no process of this host (a pid past pid_max)."""
    holders = [{"pid": 2**22 + 1, "started": 1}]
    return {"coordinator": "127.0.0.1:1", "token": token, "place": "a", "holders": holders} | fields


def test_a_fifo_mark_is_left_alone_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "FIFO1.json")  # read, it would wait for a writer forever
    run = release_stale_run(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout == f"no stale lease of this host in {tmp_path}\n"
    assert (tmp_path / "FIFO1.json").exists()


def test_a_mark_past_the_size_bound_is_left_alone_not_read(tmp_path: Path) -> None:
    text = json.dumps(gone_mark("HUGE1", host=socket.gethostname()))
    (tmp_path / "HUGE1.json").write_text(text + " " * MAX_MARK_BYTES)  # valid JSON, too big
    run = release_stale_run(tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr  # not stale: never read
    assert run.stdout == f"no stale lease of this host in {tmp_path}\n"


def test_marks_record_their_host_and_another_hosts_are_never_stale_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LEASE_DIR_ENV, str(tmp_path))
    Mark("127.0.0.1:1", "MINE", "a", [{"pid": 2**22 + 1, "started": 1}]).write()
    (tmp_path / "THEIRS.json").write_text(json.dumps(gone_mark("THEIRS", host="ci-host-b")))
    (tmp_path / "OLDER.json").write_text(json.dumps(gone_mark("OLDER")))  # no host: older npu-hil
    found = {mark.token: mark for mark in marks()}
    assert found["MINE"].host == socket.gethostname() and found["MINE"].stale
    assert found["THEIRS"].host == "ci-host-b" and not found["THEIRS"].stale
    assert found["OLDER"].host is None and not found["OLDER"].stale
