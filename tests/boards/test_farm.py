"""labgrid places as boards, against a real labgrid coordinator and exporter on 127.0.0.1 whose
NetworkService resources are loopback sshd boards (tests/fakes/labgrid_farm.py)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import psutil
import pytest
import yaml
from tests.fakes.labgrid_farm import Farm, PowerSwitch, farm_board_file
from tests.fakes.sshd import SELECTION, SshServer, keygen, suite_command, wait_until, write_sysroot
from tests.helpers import paths
from tests.helpers.cli import hil_boards

from harness.boards.farm import Lease, PlaceError
from harness.boards.inventory import BoardFileError, load_board
from harness.boards.settings import FarmSettings
from harness.plugin import BOARD_DOWN_EXIT
from harness.report.matrix import run_header
from harness.results.journal import read_records, read_run_metadata
from harness.vendors.rknn.runtimes import RUNTIMES


def boards_folder(farm: Farm, servers: list[SshServer], tmp_path: Path, **labgrid: object) -> Path:
    sysroot = write_sysroot(tmp_path / "sysroot")
    farm_board_file(tmp_path / "boards", servers, sysroot, coordinator=farm.address, **labgrid)
    return tmp_path / "boards"


@pytest.mark.parametrize(
    ("labgrid", "extra", "key", "says"),
    [
        ({"place": "a", "tags": {"soc": "rk3562"}}, {}, "labgrid", "either a place or tags"),
        ({"wait": 3}, {}, "labgrid", "either a place or tags"),
        ({"place": "a"}, {"host": "10.0.0.5"}, "host", "comes from the labgrid place"),
        ({"tags": {"SoC": "x"}}, {}, "labgrid.tags", "maps lower-case tag names to words"),
    ],
)
def test_bad_labgrid_sections_name_the_key(
    tmp_path: Path,
    sshd: SshServer,
    labgrid: dict[str, object],
    extra: dict[str, object],
    key: str,
    says: str,
) -> None:
    path = farm_board_file(tmp_path / "boards", [sshd], tmp_path, **labgrid)
    path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), **extra}))
    with pytest.raises(BoardFileError) as info:
        load_board(path, RUNTIMES)
    assert info.value.key_path == key and says in str(info.value), str(info.value)


def test_hil_boards_check_works_on_a_place_and_releases_it(
    farm: tuple[Farm, list[SshServer]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    coordinator, servers = farm
    folder = boards_folder(coordinator, servers, tmp_path, place="rk3562-b")
    assert hil_boards(["check", "--boards", str(folder), "--json"]) == 0
    (report,) = json.loads(capsys.readouterr().out)
    assert (report["board"], report["status"], report["soc"]) == ("rk3562-b", "ok", "rk3562")
    assert report["address"].endswith(f"@127.0.0.1:{servers[1].port}")
    assert report["runtime_library"].startswith("2.3.2")
    assert coordinator.acquired() == [] and coordinator.reservations().strip() == ""


def run_suite(
    tmp_path: Path, boards: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        suite_command(tmp_path, boards, "results", *args),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def finish(run: subprocess.Popen[str]) -> tuple[int, str]:
    out, err = run.communicate(timeout=900)
    return run.returncode, out + err


def test_two_xdist_workers_run_the_selection_on_two_places_and_release_both(
    farm: tuple[Farm, list[SshServer]], tmp_path: Path
) -> None:
    coordinator, servers = farm
    folder = boards_folder(coordinator, servers, tmp_path, tags={"soc": "rk3562"})
    code, output = finish(run_suite(tmp_path, folder, "-n", "2"))
    assert code == 0, output
    records = read_records(tmp_path / "results")
    assert sorted(r.id for r in records) == sorted(SELECTION)
    assert {r.backend for r in records} == {"rk3562-a", "rk3562-b"}
    assert not any(r.verdict == "infra-error" for r in records)
    assert coordinator.acquired() == [] and coordinator.reservations().strip() == ""


def test_a_run_waits_for_a_held_place_then_runs_on_it(
    farm: tuple[Farm, list[SshServer]], tmp_path: Path
) -> None:
    coordinator, servers = farm
    folder = boards_folder(coordinator, servers, tmp_path, tags={"soc": "rk3562"})
    coordinator.client("-p", "rk3562-a", "acquire")  # another user holds the only place asked for
    run = run_suite(
        tmp_path, folder, "--lg-coordinator", coordinator.address, "--lg-place", "rk3562-a"
    )
    assert wait_until(lambda: "waiting" in coordinator.reservations(), 60)
    time.sleep(6)  # long enough for a progress line
    assert run.poll() is None  # still waiting
    coordinator.client("-p", "rk3562-a", "release")
    code, output = finish(run)
    assert code == 0, output
    assert "waiting for place rk3562-a" in output
    assert {r.backend for r in read_records(tmp_path / "results")} == {"rk3562-a"}
    assert coordinator.acquired() == [] and coordinator.reservations().strip() == ""


def test_a_place_never_released_fails_the_run_at_its_timeout(
    farm: tuple[Farm, list[SshServer]], tmp_path: Path
) -> None:
    coordinator, servers = farm
    folder = boards_folder(coordinator, servers, tmp_path, place="rk3562-a", wait=3)
    coordinator.client("-p", "rk3562-a", "acquire")
    code, output = finish(run_suite(tmp_path, folder))
    assert code == BOARD_DOWN_EXIT, output  # the configured board is down: the run stops
    assert "no place rk3562-a became free" in output and "within 3 s" in output
    assert coordinator.acquired() == ["rk3562-a"]  # still the other user's
    assert coordinator.reservations().strip() == ""  # ours was cancelled


def hold(coordinator: Farm, tmp_path: Path, place: str) -> subprocess.Popen[str]:
    """A harness process (in its own process group) that leases ``place`` and sleeps."""
    script = tmp_path / "hold.py"
    script.write_text(
        "import signal, sys, time\n"
        # Ctrl-C as at a terminal: a job started in the background of a non-interactive
        # shell (as CI may start this one) inherits SIGINT ignored.
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from harness.boards.farm import Lease\n"
        "from harness.boards.settings import FarmSettings\n"
        f"Lease(FarmSettings({coordinator.address!r}, {{'name': {place!r}}})).acquire()\n"
        "print('acquired', flush=True)\n"
        "time.sleep(600)\n"
    )
    return subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(paths.ROOT)},
        start_new_session=True,
    )


@pytest.mark.parametrize(
    "how", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name
)
def test_a_killed_harness_leaves_no_acquired_place(
    farm: tuple[Farm, list[SshServer]], tmp_path: Path, how: signal.Signals, lease_marks: Path
) -> None:
    coordinator, _ = farm
    holder = hold(coordinator, tmp_path, "rk3562-a")
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "acquired\n"
        assert coordinator.acquired() == ["rk3562-a"]
        killed = time.monotonic()
        os.killpg(holder.pid, how)  # the harness and its process group
        holder.wait(timeout=60)
        assert wait_until(lambda: coordinator.acquired() == [], 60)
        released = time.monotonic() - killed
        assert wait_until(lambda: coordinator.reservations().strip() == "", 30)
        assert wait_until(lambda: not list(lease_marks.iterdir()), 30)  # the guard's too
    finally:
        if holder.poll() is None:
            holder.kill()
    print(f"place released {released:.1f} s after {how.name}")  # the measurement, for the record
    assert released < 30


def test_a_lease_reads_the_network_service(farm: tuple[Farm, list[SshServer]]) -> None:
    coordinator, servers = farm
    lease = Lease(FarmSettings(coordinator.address, {"name": "rk3562-b"}, 30))
    service = lease.acquire()
    try:
        assert lease.place == "rk3562-b"
        assert (service["address"], service["port"]) == ("127.0.0.1", servers[1].port)
        assert coordinator.acquired() == ["rk3562-b"]
    finally:
        lease.release()
    assert coordinator.acquired() == []


@pytest.mark.parametrize(
    ("args", "env"),
    [(["-n", "2"], {}), ([], {"PYTHONUNBUFFERED": "1"})],
    ids=["xdist", "unbuffered"],
)
def test_a_farm_board_that_cannot_be_leased_stops_the_default_run(
    farm: tuple[Farm, list[SshServer]], tmp_path: Path, args: list[str], env: dict[str, str]
) -> None:
    coordinator, servers = farm
    folder = boards_folder(coordinator, servers, tmp_path, place="rk3562-a", wait=2)
    coordinator.client("-p", "rk3562-a", "acquire")  # someone else's session
    command = ["--backend", "auto", "--capture", "fd", *args]  # pytest's capture on
    code, output = finish(run_suite(tmp_path, folder, *command, env=env))
    assert code == BOARD_DOWN_EXIT, output
    assert "board farm-rk3562 (labgrid place rk3562-a) is unreachable" in output
    assert "no place rk3562-a became free" in output
    assert not (tmp_path / "results" / "journal.jsonl").exists()
    (down,) = read_run_metadata(tmp_path / "results")["board_down"]
    assert (down["board"], down["cases"]) == ("farm-rk3562", "not run")
    assert coordinator.reservations().strip() == ""  # ours cancelled; the place still theirs


def test_with_the_fallback_asked_for_the_records_say_the_place_was_down(
    farm: tuple[Farm, list[SshServer]], tmp_path: Path
) -> None:
    coordinator, servers = farm
    folder = boards_folder(coordinator, servers, tmp_path, place="rk3562-a", wait=2)
    coordinator.client("-p", "rk3562-a", "acquire")
    fallback = ["--backend", "auto", "--board-fallback", "simulator", "-n", "2"]
    code, output = finish(run_suite(tmp_path, folder, *fallback))
    assert code == 0, output
    records = read_records(tmp_path / "results")
    assert {r.backend for r in records} == {"simulator"} and len(records) == len(SELECTION)
    for record in records:
        assert any("farm-rk3562 (labgrid place rk3562-a) is unreachable" in w
                   and "ran on the simulator instead" in w for w in record.warnings)  # fmt: skip
    meta = read_run_metadata(tmp_path / "results")
    first = run_header(records, meta)[0]
    assert first[0] == "board down" and "its cases ran on the simulator" in first[1]
    assert "npu-hil boards down" in output


SPY = """
import json, os, time
from harness.boards import farm

_client = farm._client


def spied(settings, *args, **kwargs):
    with open(os.environ["FARM_SPY"], "a") as log:
        log.write(json.dumps({"pid": os.getpid(), "args": list(args), "at": time.time()}) + "\\n")
    return _client(settings, *args, **kwargs)


farm._client = spied
"""


def test_each_worker_has_one_lease_from_discovery_to_its_last_case(
    farm: tuple[Farm, list[SshServer]], tmp_path: Path
) -> None:
    coordinator, servers = farm
    folder = boards_folder(coordinator, servers, tmp_path, tags={"soc": "rk3562"})
    # a spy on every labgrid-client call the harness makes (it changes none of them)
    (tmp_path / "spy").mkdir()
    (tmp_path / "spy" / "farm_spy.py").write_text(SPY)
    calls_log = tmp_path / "calls.jsonl"
    env = {"FARM_SPY": str(calls_log), "PYTHONPATH": os.pathsep.join(
        [str(tmp_path / "spy"), str(paths.ROOT)])}  # fmt: skip
    code, output = finish(run_suite(tmp_path, folder, "-n", "2", "-p", "farm_spy", env=env))
    assert code == 0, output
    calls = [json.loads(line) for line in calls_log.read_text().splitlines()]
    verbs = [call["args"][2] if call["args"][0] == "-p" else call["args"][0] for call in calls]
    assert verbs.count("reserve") == 2 and verbs.count("acquire") == 2, verbs
    assert verbs.count("release") == 2 and verbs.count("cancel-reservation") == 2, verbs
    leasing = {"reserve", "wait", "acquire", "release", "cancel-reservation"}
    by = {c["pid"] for c, verb in zip(calls, verbs, strict=True) if verb in leasing}
    assert len(by) == 1  # the controller only: no worker leases
    checks = {c["pid"] for c, verb in zip(calls, verbs, strict=True) if verb == "show"} - by
    assert len(checks) == 2  # each worker asks after its batches whether its lease holds
    first_release = min(c["at"] for c, v in zip(calls, verbs, strict=True) if v == "release")
    last_acquire = max(c["at"] for c, v in zip(calls, verbs, strict=True) if v == "acquire")
    records = read_records(tmp_path / "results")
    assert {r.backend for r in records} == {"rk3562-a", "rk3562-b"}
    assert all(last_acquire < _started(r.started) for r in records)  # leased before any case
    assert all(_started(r.started) + r.duration_s < first_release for r in records)
    boards = read_run_metadata(tmp_path / "results")["boards"]  # discovery on the held places
    assert sorted(b["board"] for b in boards) == ["rk3562-a", "rk3562-b"]
    assert coordinator.acquired() == [] and coordinator.reservations().strip() == ""


def _started(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


@pytest.mark.parametrize("cleaner", ["next lease", "release-stale"])
def test_a_place_left_by_a_killed_process_tree_is_released_by_the_next_harness(
    farm: tuple[Farm, list[SshServer]], tmp_path: Path, lease_marks: Path, cleaner: str
) -> None:
    coordinator, _ = farm
    holder = hold(coordinator, tmp_path, "rk3562-a")
    tree = [psutil.Process(holder.pid)]
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "acquired\n"
        tree += tree[0].children(recursive=True)
        assert len(tree) == 2  # the harness and its guard
    finally:
        for process in reversed(tree):  # the whole tree, as a CI runner stops a job (the
            process.kill()  # guard first: it would release the place once the harness is gone)
        psutil.wait_procs(tree, timeout=30)
    assert coordinator.acquired() == ["rk3562-a"]  # nothing of the job is left to release it
    coordinator.client("-p", "rk3562-b", "acquire")  # this user's own session, by hand
    started = time.monotonic()
    if cleaner == "next lease":
        said: list[str] = []
        lease = Lease(FarmSettings(coordinator.address, {"name": "rk3562-a"}, 30), said.append)
        lease.acquire()
        took = time.monotonic() - started
        assert lease.place == "rk3562-a"
        lease.release()
        (line,) = [line for line in said if "stale" in line]
    else:
        hil = Path(sys.executable).with_name("hil")
        done = subprocess.run([str(hil), "boards", "release-stale"], capture_output=True,
                              text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(
                                  paths.ROOT)})  # fmt: skip
        took = time.monotonic() - started
        assert done.returncode == 0, done.stdout + done.stderr
        line = done.stdout.strip()
        assert "rk3562-a" not in coordinator.acquired()
    assert line.startswith("released stale labgrid place rk3562-a (reservation ")
    assert f"at {coordinator.address}: its holders (pid {holder.pid}, " in line
    assert coordinator.acquired() == ["rk3562-b"]  # the hand-made session is not touched
    assert coordinator.reservations().strip() == ""
    assert not list(lease_marks.iterdir())
    print(f"{cleaner}: stale place released {took:.1f} s after it started")


def test_waiting_for_a_place_survives_a_coordinator_restart(
    farm: tuple[Farm, list[SshServer]],
) -> None:
    coordinator, _ = farm
    coordinator.client("-p", "rk3562-a", "acquire")  # held by hand: the lease waits
    said: list[str] = []
    lease = Lease(FarmSettings(coordinator.address, {"name": "rk3562-a"}, 120), said.append)
    got: list[object] = []
    waiting = threading.Thread(target=lambda: got.append(_outcome(lease.acquire)))
    waiting.start()
    try:
        assert wait_until(lambda: "waiting" in coordinator.reservations(), 60)
        coordinator.restart_coordinator(down_s=2)  # it forgets the hand-made acquisition too
        waiting.join(timeout=180)
        assert not waiting.is_alive()
        (service,) = got
        assert isinstance(service, dict), service  # not the PlaceError of before
        assert lease.place == "rk3562-a" and coordinator.acquired() == ["rk3562-a"]
        lost = [line for line in said if "trying again in 5 s" in line]
        assert lost and f"at {coordinator.address}" in lost[0], said
    finally:
        lease.release()
    assert coordinator.acquired() == []


def _outcome(call: Callable[[], object]) -> object:
    try:
        return call()
    except Exception as exc:  # the test looks at what came back
        return exc


def test_a_place_whose_exporter_is_gone_is_released_and_another_taken(
    two_exporters: tuple[Farm, list[SshServer]],
) -> None:
    coordinator, servers = two_exporters
    coordinator.stop_exporter("exp-a")  # rk3562-a's host is gone
    coordinator.client("-p", "rk3562-b", "acquire")  # and rk3562-b busy: a is allocated first
    by_name = Lease(FarmSettings(coordinator.address, {"name": "rk3562-a"}, 30))
    with pytest.raises(PlaceError, match="labgrid place rk3562-a: its resources are not expo"):
        by_name.acquire()  # the place asked for by name: no other would do
    assert coordinator.acquired() == ["rk3562-b"]  # rk3562-a was not kept
    assert coordinator.reservations().strip() == ""

    said: list[str] = []
    lease = Lease(FarmSettings(coordinator.address, {"soc": "rk3562"}, 120), said.append)
    got: list[object] = []
    waiting = threading.Thread(target=lambda: got.append(_outcome(lease.acquire)))
    waiting.start()
    try:
        assert wait_until(lambda: any("trying another" in line for line in said), 60), said
        assert "rk3562-a" not in coordinator.acquired()  # skipped and released
        coordinator.client("-p", "rk3562-b", "release")
        waiting.join(timeout=120)
        (service,) = got
        assert isinstance(service, dict), service
        assert lease.place == "rk3562-b" and service["port"] == servers[1].port
    finally:
        lease.release()
    assert coordinator.acquired() == [] and coordinator.reservations().strip() == ""


def test_a_lease_lost_mid_run_is_named_and_the_run_goes_on_on_a_new_lease(
    farm: tuple[Farm, list[SshServer]], tmp_path: Path
) -> None:
    coordinator, servers = farm
    folder = boards_folder(coordinator, servers, tmp_path, place="rk3562-a")
    board_file = folder / "farm-rk3562.yaml"
    document = yaml.safe_load(board_file.read_text())
    document["test_faults"] = {SELECTION[1]: "hang"}  # the second case keeps the board busy
    board_file.write_text(yaml.safe_dump(document, sort_keys=False))
    run = run_suite(tmp_path, folder, "--hil-batch", "1", "--hil-timeout", "20")
    journal = tmp_path / "results" / "journal.jsonl"
    assert wait_until(lambda: journal.is_file() and journal.read_text().count("\n") >= 1, 300)
    coordinator.restart_coordinator()  # while the second case hangs on the board
    code, output = finish(run)
    assert code == 1, output  # the case of the lost lease: an infra error
    records = {r.id: r for r in read_records(tmp_path / "results")}
    lost = records[SELECTION[1]]
    assert lost.verdict == "infra-error", lost
    assert "labgrid place rk3562-a: the lease (reservation " in lost.detail
    assert "was lost while this batch ran" in lost.detail
    assert "leased again: labgrid place rk3562-a runs the next cases" in lost.detail
    for case in (SELECTION[0], *SELECTION[2:]):  # before the loss, and on the new lease
        assert records[case].backend == "rk3562-a" and records[case].verdict != "infra-error"
    assert coordinator.acquired() == [] and coordinator.reservations().strip() == ""


def test_a_place_without_a_network_service_is_released_not_kept(
    farm: tuple[Farm, list[SshServer]],
) -> None:
    coordinator, _ = farm
    coordinator.client("-p", "no-ssh", "create")  # a place with no NetworkService match
    lease = Lease(FarmSettings(coordinator.address, {"name": "no-ssh"}, 30))
    with pytest.raises(PlaceError, match="labgrid place no-ssh has no NetworkService"):
        lease.acquire()
    assert coordinator.acquired() == []  # it was acquired, then released
    assert coordinator.reservations().strip() == ""


def test_a_board_whose_sshd_stops_mid_run_is_power_cycled_and_the_run_goes_on(
    sshd_factory: Callable[[], SshServer], tmp_path: Path
) -> None:
    server = sshd_factory()
    switch = PowerSwitch([server])  # labgrid's simplerest power switch, answered here
    coordinator = Farm(tmp_path / "farm")
    try:
        coordinator.export({"board-a": server}, power=switch)
        coordinator.place("rk3562-a", "board-a", soc="rk3562")
        coordinator.client("-p", "rk3562-a", "add-match", "exp/board-a/NetworkPowerPort")
        folder = boards_folder(coordinator, [server], tmp_path, place="rk3562-a", recovery_wait=90)
        board_file = folder / "farm-rk3562.yaml"
        document = yaml.safe_load(board_file.read_text())
        document["test_faults"] = {SELECTION[1]: "hang"}  # the board is busy with it when
        board_file.write_text(yaml.safe_dump(document, sort_keys=False))  # it stops answering
        run = run_suite(tmp_path, folder, "--hil-batch", "1", "--hil-timeout", "30")
        journal = tmp_path / "results" / "journal.jsonl"
        assert wait_until(lambda: journal.is_file() and journal.read_text().count("\n") >= 1, 300)
        server.stop()  # its sshd stops: the board no longer answers
        code, output = finish(run)
    finally:
        coordinator.stop()
        switch.stop()
    assert switch.switched == [(0, 0), (0, 1)], output  # off, then on, through labgrid
    records = {r.id: r for r in read_records(tmp_path / "results")}
    assert code == 1, output  # the one case lost is an infra error
    lost = records[SELECTION[1]]
    assert lost.verdict == "infra-error", lost
    assert "was power-cycled through its labgrid place and answered again after" in lost.detail
    for case in (SELECTION[0], *SELECTION[2:]):
        assert records[case].backend == "rk3562-a" and records[case].verdict != "infra-error"


def test_a_labgrid_environment_file_names_the_place_and_the_key(
    farm: tuple[Farm, list[SshServer]], tmp_path: Path
) -> None:
    coordinator, servers = farm
    folder = boards_folder(coordinator, servers, tmp_path, place="rk3562-a")
    board_file = folder / "farm-rk3562.yaml"
    document = yaml.safe_load(board_file.read_text())
    document["auth"] = {"key_file": str(keygen(tmp_path / "stranger"))}  # not authorized
    board_file.write_text(yaml.safe_dump(document, sort_keys=False))
    (folder / "keys").mkdir()
    shutil.copy(servers[0].user_key, folder / "keys" / "hil_ed25519")
    env = folder / "env.yaml"  # beside the board file, as labgrid users keep it
    env.write_text(yaml.safe_dump({
        "targets": {"main": {"resources": {"RemotePlace": {"name": "rk3562-b"}},
                             "drivers": {"SSHDriver": {"keyfile": "keys/hil_ed25519"}}}},
        "options": {"coordinator_address": coordinator.address},
    }))  # fmt: skip
    (tmp_path / "no boards").mkdir()
    code, output = finish(
        run_suite(tmp_path, folder, "--lg-env", str(env), "--boards", str(tmp_path / "no boards"))
    )
    assert code == 0, output
    assert {r.backend for r in read_records(tmp_path / "results")} == {"rk3562-b"}
    assert coordinator.acquired() == [] and coordinator.reservations().strip() == ""

    env.write_text(yaml.safe_dump({"targets": {"main": {"resources": {}}}}))
    code, output = finish(run_suite(tmp_path, folder, "--lg-env", str(env)))  # in --boards
    assert code == 4, output  # a usage error naming the file and the key
    assert f"{env}" in output and "targets.main.resources.RemotePlace" in output


def test_a_live_lease_of_another_host_sharing_the_marks_is_reported_not_released(
    farm: tuple[Farm, list[SshServer]], tmp_path: Path, lease_marks: Path
) -> None:
    """Two CI hosts share ~/.cache (an NFS home): host B's live lease, whose pids are no
    processes here, is listed by this host's ``hil boards release-stale``, never released."""
    coordinator, _ = farm
    holder = hold(coordinator, tmp_path, "rk3562-a")
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "acquired\n"
        [mark] = lease_marks.glob("*.json")
        data = json.loads(mark.read_text())
        # the lease as host B wrote it: its holders' pids name no live process of this host
        gone = [{"pid": 2**22 + 1, "started": 1}]
        mark.write_text(json.dumps({**data, "host": "ci-host-b", "holders": gone}))
        hil = Path(sys.executable).with_name("hil")
        done = subprocess.run([str(hil), "boards", "release-stale"], capture_output=True,
                              text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(
                                  paths.ROOT)})  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert coordinator.acquired() == ["rk3562-a"]  # B's run goes on
        assert mark.exists()
        said = (
            f"labgrid place rk3562-a (reservation {data['token']}) at {coordinator.address}: "
            f"leased from host ci-host-b (pid {2**22 + 1} there), not judged from"
        )
        assert said in done.stdout
    finally:
        os.killpg(holder.pid, signal.SIGTERM)
        holder.wait(timeout=60)
    assert wait_until(lambda: coordinator.acquired() == [], 60)  # its own guard releases it
