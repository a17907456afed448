"""labgrid places as a board source: reserve, acquire, read the NetworkService, release.

A farm board (a board file with a ``labgrid:`` section, or ``--lg-place``/``--lg-tags``) is a
place on a labgrid coordinator that several hosts share. ``lease(board)`` reserves a place by
name or tags (labgrid's reservations: each reservation gets a different place, so xdist workers
with the same board file get different boards), waits for the coordinator to allocate one
(progress every few seconds, up to the farm's ``wait_s``), acquires it, and gives the board
with the SSH host, port and user of the place's ``NetworkService``; the board file's keys and
known_hosts still decide who the board is. On leaving, the place is released and the
reservation cancelled. A guard process (``python -m harness.boards.farm``, in its own session)
does the same if the harness dies without doing it (SIGKILL, SIGTERM): labgrid keeps an
acquired place acquired until someone releases it, and never expires the reservation of an
acquired place.

The coordinator is reached through ``labgrid-client`` (labgrid's command line, ``pip install
npu-hil[farm]``), one process per call, so labgrid's gRPC and asyncio stay out of pytest's
process. Its output is parsed here and nowhere else; a NetworkService password is never used
nor shown (the board file's ``auth`` is).
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

from harness.boards import BoardError
from harness.boards.inventory import Board
from harness.boards.leases import Mark, marks, process_identity, this_host
from harness.boards.settings import FarmSettings, SshSettings
from harness.text import printable

log = logging.getLogger(__name__)

PLACE_FIELD = "{place}"  # in a farm board's workdir: the leased place's name
POLL_S = 5.0  # how often a waiting lease says so
CLIENT_TIMEOUT_S = 60.0
STALE_TIMEOUT_S = 15.0  # per labgrid-client call releasing a stale lease
_RELEASED = b"released"  # what the harness tells its guard when it released the place itself
_RESOURCE = re.compile(r"^Acquired resource '[^']*' \(([^)]*)\):$")


class PlaceError(BoardError):
    """No place could be leased: the coordinator, labgrid-client, or no free place in time."""


def labgrid_client() -> str:
    """The ``labgrid-client`` beside this interpreter, else on PATH."""
    beside = Path(sys.executable).with_name("labgrid-client")
    found = str(beside) if beside.is_file() else shutil.which("labgrid-client")
    if found is None:
        raise PlaceError("labgrid-client not found: install labgrid (pip install npu-hil[farm])")
    return found


def _command(farm: FarmSettings, *args: str) -> list[str]:
    coordinator = ["-x", farm.coordinator] if farm.coordinator else []
    return [labgrid_client(), *coordinator, *args]


def _client(farm: FarmSettings, *args: str, timeout: float = CLIENT_TIMEOUT_S) -> str:
    """labgrid-client's stdout; PlaceError with its last line of stderr when it fails
    (``CoordinatorLost`` when the coordinator is away or forgot the reservation)."""
    try:
        done = subprocess.run(
            _command(farm, *args), capture_output=True, text=True, timeout=timeout, check=False
        )
    except OSError as exc:
        raise PlaceError(f"cannot run labgrid-client: {exc}") from None
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        where = farm.coordinator or "the default coordinator"
        verb = args[2] if args[0] == "-p" else args[0]
        last = printable(lines[-1]) if lines else f"exit status {done.returncode}"
        kind = CoordinatorLost if any(_LOST.search(line) for line in lines) else PlaceError
        raise kind(f"labgrid-client {verb} at {where}: {last}")
    return done.stdout


class CoordinatorLost(PlaceError):
    """The coordinator does not answer, or no longer knows the reservation (it restarted)."""


# labgrid-client's words for a coordinator that is away or restarted (and forgot reservations)
_LOST = re.compile(
    r"Could not connect to coordinator|coordinator is unavailable|failed to connect to all "
    r"addresses|Socket closed|Connection reset|UNAVAILABLE|"
    r"[Rr]eservation \w+ does not exist|reservation token \w+ matches nothing"
)


class _Unusable(PlaceError):
    """The place allocated has no NetworkService (its exporter or resource is gone)."""

    def __init__(self, token: str, reason: str) -> None:
        super().__init__(reason)
        self.token = token


# a leased place's name and NetworkService -> None when the run can use it, else the problem
Accept = Callable[[str, dict[str, Any]], str | None]


class Lease:
    """One reservation and the place acquired through it; ``acquire``, then ``release``."""

    def __init__(self, farm: FarmSettings, progress: Callable[[str], None] = log.warning) -> None:
        self.farm = farm
        self.progress = progress
        self.token: str | None = None
        self.place: str | None = None
        self._acquired = False
        self._mark: Mark | None = None
        self._guard: subprocess.Popen[bytes] | None = None

    def acquire(self, accept: Accept | None = None) -> dict[str, Any]:
        """Release this host's stale leases from the coordinator, then reserve, wait for, and
        acquire a place; its NetworkService parameters.

        Within the farm's ``wait_s``: a coordinator that goes away or restarts is tried again
        every ``POLL_S`` seconds, and a place without a NetworkService, or one ``accept``
        (given the place's name and NetworkService) finds a problem with, is skipped (its
        reservation keeps it from being allocated again) for another matching one.
        """
        released, problems, _elsewhere = release_stale(_coordinator(self.farm))
        for line in released + problems:
            self.progress(line)
        deadline = time.monotonic() + self.farm.wait_s
        skipped: dict[str, str] = {}  # reservation token -> why its place was skipped
        try:
            while True:
                try:
                    return self._acquire_once(deadline, skipped, accept)
                except _Unusable as exc:
                    skipped[exc.token] = str(exc)
                    if set(self.farm.filters) == {"name"}:  # no other place would do
                        raise PlaceError(str(exc)) from None
                    self.progress(f"{exc}; trying another {self.farm.wanted}")
                except CoordinatorLost as exc:
                    self.release()
                    left = deadline - time.monotonic()
                    if left < POLL_S:
                        raise PlaceError(
                            f"{exc} (until the end of the {self.farm.wait_s:g} s wait)"
                        ) from None
                    self.progress(
                        f"{exc}; trying again in {POLL_S:g} s ({left:.0f} s of the wait left)"
                    )
                    time.sleep(POLL_S)
        finally:
            for token in skipped:
                with contextlib.suppress(PlaceError, subprocess.TimeoutExpired):
                    _client(self.farm, "cancel-reservation", token)

    def _acquire_once(
        self, deadline: float, skipped: dict[str, str], accept: Accept | None
    ) -> dict[str, Any]:
        filters = [f"{key}={value}" for key, value in sorted(self.farm.filters.items())]
        reply = _client(self.farm, "reserve", "--shell", *filters)
        found = re.search(r"LG_TOKEN=(\w{1,64})\b", reply)
        if found is None:
            raise PlaceError(f"labgrid-client reserve gave no token: {printable(reply[:200])}")
        self.token = found[1]
        try:
            self._start_guard()
            self._wait(deadline, skipped)
            self._acquired = True  # before asking: a reply lost on the way still acquired it
            try:
                _client(self.farm, "-p", f"+{self.token}", "acquire")
            except PlaceError as exc:
                if "no matching remote resource" not in str(exc):
                    raise
                self._acquired = False
                self._unusable(f"its resources are not exported (exporter gone?): {exc}")
            show = _client(self.farm, "-p", f"+{self.token}", "show")
            try:
                self.place, service = network_service(show)
            except PlaceError as exc:
                self._unusable(str(exc))
            self._marked(self.place)
            problem = accept(self.place, service) if accept is not None else None
            if problem is not None:
                self._unusable(problem)
        except BaseException as exc:
            if not isinstance(exc, _Unusable):
                self.release()
            raise
        log.info("leased labgrid place %s (reservation %s)", self.place, self.token)
        return service

    def _unusable(self, why: str) -> NoReturn:
        """Let the allocated place go (not its reservation: that keeps the place from being
        allocated to this lease again) and say why it cannot be used."""
        assert self.token is not None
        token = self.token
        try:
            shown = _client(self.farm, "-p", f"+{token}", "show", timeout=STALE_TIMEOUT_S)
            found = re.search(r"^Place '([^'\n]*)':$", shown, re.M)
            name = f"labgrid place {place_name(found[1])}" if found else "a labgrid place"
        except (PlaceError, subprocess.TimeoutExpired):
            name = "a labgrid place"
        self._let_go()
        raise _Unusable(token, why if why.startswith("labgrid ") else f"{name}: {why}")

    def _marked(self, place: str | None) -> None:
        """This host's mark of the lease (``harness.boards.leases``), held by this process and
        its guard."""
        assert self.token is not None and self._guard is not None
        holders = [process_identity(os.getpid()), process_identity(self._guard.pid)]
        self._mark = Mark(_coordinator(self.farm), self.token, place, [h for h in holders if h])
        self._mark.write()

    def _wait(self, deadline: float, skipped: dict[str, str]) -> None:
        """Until the coordinator allocates a place to the reservation, or ``deadline``."""
        assert self.token is not None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                passed = f"; skipped: {'; '.join(skipped.values())}" if skipped else ""
                raise PlaceError(
                    f"no {self.farm.wanted.removeprefix('a ')} became free at "
                    f"{self.farm.coordinator or 'the default coordinator'} within "
                    f"{self.farm.wait_s:g} s (reservation {self.token} cancelled){passed}"
                )
            try:
                _client(self.farm, "wait", self.token, timeout=min(POLL_S, remaining))
                return
            except subprocess.TimeoutExpired:
                waited = self.farm.wait_s - (deadline - time.monotonic())
                self.progress(
                    f"waiting for {self.farm.wanted} (reservation {self.token}): "
                    f"{waited:.0f} s of {self.farm.wait_s:g} s"
                )

    def _start_guard(self) -> None:
        """The process that releases the place if this one dies without doing it (and the mark
        naming both, before any place is acquired)."""
        assert self.token is not None
        mark = Mark(_coordinator(self.farm), self.token, None, []).path
        argv = [sys.executable, "-m", "harness.boards.farm", str(mark), *_command(self.farm)]
        argv.append(self.token)
        source = str(Path(__file__).resolve().parents[2])  # the folder holding harness/
        path = os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))
        self._guard = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": path},
            start_new_session=True,  # a signal to the harness's process group spares it
        )
        self._marked(None)

    def _let_go(self) -> None:
        """Release the place (if acquired), tell the guard, remove the mark; the reservation
        stays."""
        if self._acquired:
            with contextlib.suppress(PlaceError, subprocess.TimeoutExpired):
                _client(self.farm, "-p", f"+{self.token}", "release")
        if self._guard is not None:
            with contextlib.suppress(OSError):
                assert self._guard.stdin is not None
                self._guard.stdin.write(_RELEASED)
                self._guard.stdin.close()
            self._guard.wait(timeout=10)
            self._guard = None
        if self._mark is not None:
            self._mark.remove()
        self.token = self.place = self._mark = None
        self._acquired = False

    def release(self) -> None:
        """Release the place (if acquired) and cancel the reservation; never raises."""
        token, place = self.token, self.place
        if token is None:
            return
        self._let_go()
        try:
            _client(self.farm, "cancel-reservation", token)
        except (PlaceError, subprocess.TimeoutExpired) as exc:
            log.warning("cannot cancel labgrid reservation %s: %s", token, exc)
        log.info("released labgrid place %s (reservation %s)", place, token)


def power_cycle(farm: FarmSettings, token: str) -> None:
    """Switch the leased place's power off and on again (its power resource, such as a
    NetworkPowerPort, through ``labgrid-client power cycle``); PlaceError if it cannot."""
    _client(farm, "-p", f"+{token}", "power", "cycle")


def lease_held(farm: FarmSettings, token: str) -> bool | None:
    """Whether the coordinator still gives a place to reservation ``token``; None when it
    does not answer (it may come back with the lease or without)."""
    try:
        show = _client(farm, "-p", f"+{token}", "show", timeout=STALE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None
    except CoordinatorLost as exc:
        return False if "matches nothing" in str(exc) else None
    except PlaceError:
        return False
    acquired = re.search(r"^  acquired: (.*)$", show, re.M)
    return acquired is not None and acquired[1] != "None"


def network_service(show: str) -> tuple[str, dict[str, Any]]:
    """The place's name and its acquired NetworkService's address, port and username from
    ``labgrid-client show``; PlaceError for anything else (the coordinator and exporters are
    outside the harness: their text is checked like a file's)."""
    place = re.search(r"^Place '([^'\n]*)':$", show, re.M)
    name = f"place {place_name(place[1])}" if place else "the place"
    lines = show.splitlines()
    for index, line in enumerate(lines):
        found = _RESOURCE.match(line)
        if found and found[1].split("/")[2:3] == ["NetworkService"]:
            block = []
            for following in lines[index + 1 :]:
                if not following.startswith("  "):
                    break
                block.append(following)
            try:
                resource = ast.literal_eval("\n".join(block).strip())
                params = resource["params"]
                service = {
                    "address": params["address"],
                    "port": params.get("port", 22),
                    "username": params["username"],
                }
            except (ValueError, TypeError, SyntaxError, KeyError, MemoryError, RecursionError):
                raise PlaceError(f"labgrid {name}: its NetworkService cannot be read") from None
            _check_service(name, service)
            if place is not None:
                return place[1], service
    raise PlaceError(
        f"labgrid {name} has no NetworkService resource to reach the board by SSH "
        "(its exporter or resource is gone, or the place has none)"
    )


# A place name becomes a folder name (``{place}`` in a board's workdir) and a record's backend.
_PLACE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_HOST = re.compile(r"^[A-Za-z0-9_.:\[\]%-]{1,253}$")
_USER = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._-]{0,63}$")


def place_name(name: str) -> str:
    """``name`` as the coordinator gave it, when it can name a folder; else PlaceError (with
    the name made printable: it may carry anything)."""
    if not _PLACE_NAME.match(name) or ".." in name:
        raise PlaceError(
            f"labgrid place name {printable(repr(name))[:140]} is not usable: a place's name "
            "names its work directory, so it is letters, digits, '.', '_' and '-' only"
        )
    return name


def _check_service(place: str, service: dict[str, Any]) -> None:
    address, port, user = service["address"], service["port"], service["username"]
    bad = [
        what
        for what, good in (
            ("address", isinstance(address, str) and _HOST.match(address)),
            ("port", isinstance(port, int) and not isinstance(port, bool) and 0 < port < 65536),
            ("username", isinstance(user, str) and _USER.match(user)),
        )
        if not good
    ]
    if bad:
        raise PlaceError(f"labgrid {place}: its NetworkService has no usable {' or '.join(bad)}")


@contextlib.contextmanager
def lease(board: Board, progress: Callable[[str], None] = log.warning) -> Iterator[Board]:
    """``board`` (a farm board) on a leased place (``leased_board``), released on leaving."""
    assert board.farm is not None
    if not isinstance(board.transport, SshSettings):
        raise PlaceError(f"board {board.name}: a labgrid place is reached by SSH, not adb")
    held = Lease(board.farm, progress)
    service = held.acquire()
    try:
        assert held.place is not None
        yield leased_board(board, held.place, service)
    finally:
        held.release()


def leased_board(board: Board, place: str, service: Mapping[str, Any]) -> Board:
    """``board`` (a farm board) as the leased ``place``: named after it, reached at its
    NetworkService ``service`` with the board file's keys, ``{place}`` in its workdir replaced
    by the place's name (places that share one host)."""
    assert isinstance(board.transport, SshSettings)
    place = place_name(place)
    _check_service(f"place {place}", dict(service))
    transport = dataclasses.replace(
        board.transport,
        host=str(service["address"]),
        port=int(service.get("port", 22)),
        user=str(service["username"]),
    )
    workdir = board.workdir.replace(PLACE_FIELD, place)
    return dataclasses.replace(board, name=place, transport=transport, workdir=workdir, farm=None)


class StaleLeases(NamedTuple):
    released: list[str]
    problems: list[str]  # stale, not released: its coordinator does not answer
    elsewhere: list[str]  # marks of another host (or none known): not judged here


def release_stale(coordinator: str | None, *, everywhere: bool = False) -> StaleLeases:
    """Release the leases this host and user hold on ``coordinator`` (every coordinator with
    ``everywhere``) whose holders are all gone (``harness.boards.leases``): what was released,
    what could not be (its coordinator does not answer: the mark stays for the next try), and
    the marks of other hosts, which this host cannot judge (left as they are). Each stale
    lease costs two labgrid-client calls (benchmarks/bench_stale_leases.py)."""
    found = StaleLeases([], [], [])
    for mark in marks():
        if mark.coordinator != coordinator and not everywhere:
            continue
        if not mark.here:
            pids = ", ".join(str(holder.get("pid")) for holder in mark.holders)
            host = f"host {mark.host}" if mark.host else "an unknown host (an older npu-hil's mark)"
            found.elsewhere.append(
                f"{_leased(mark)}: leased from {host} (pid {pids or 'none'} there), not judged "
                f"from {this_host()}; hil boards release-stale on that host releases it if stale"
            )
        elif mark.stale:
            released, line = _release_stale(mark)
            if line:
                (found.released if released else found.problems).append(line)
    return found


def _leased(mark: Mark) -> str:
    return (
        f"labgrid place {mark.place or '(not yet known)'} (reservation {mark.token}) at "
        f"{mark.coordinator or 'the default coordinator'}"
    )


def _release_stale(mark: Mark) -> tuple[bool, str]:
    """Release the place of stale ``mark``, cancel its reservation and remove the mark; whether
    that went (or the place was not acquired any more), and the line saying so ("": nothing
    to say, the place was free already)."""
    farm = FarmSettings(mark.coordinator, {})
    pids = ", ".join(str(holder.get("pid")) for holder in mark.holders)
    said = f"released stale {_leased(mark)}: its holders (pid {pids}) are gone"
    try:
        _client(farm, "-p", f"+{mark.token}", "release", timeout=STALE_TIMEOUT_S)
    except (PlaceError, subprocess.TimeoutExpired) as exc:
        try:  # not acquired any more, or the coordinator is away?
            _client(farm, "places", timeout=STALE_TIMEOUT_S)
        except (PlaceError, subprocess.TimeoutExpired):
            return False, f"cannot release stale {_leased(mark)}: {_reason(exc)}"
        said = ""
    with contextlib.suppress(PlaceError, subprocess.TimeoutExpired):
        _client(farm, "cancel-reservation", mark.token, timeout=STALE_TIMEOUT_S)
    mark.remove()
    return True, said


def _reason(exc: BaseException) -> str:
    if isinstance(exc, subprocess.TimeoutExpired):
        return f"the coordinator did not answer within {exc.timeout:g} s"
    return str(exc)


def _coordinator(farm: FarmSettings) -> str | None:
    """The coordinator labgrid-client talks to for ``farm`` (None: labgrid's default)."""
    return farm.coordinator or os.environ.get("LG_COORDINATOR") or None


def _guard(argv: list[str]) -> int:
    """``python -m harness.boards.farm MARK LABGRID-CLIENT [ARGS...] TOKEN``: wait for the
    harness (stdin); unless it said it released the place, release it, cancel the reservation
    and remove the lease's mark."""
    mark, *client, token = argv
    if sys.stdin.buffer.read() == _RELEASED:
        return 0
    for args in (["-p", f"+{token}", "release"], ["cancel-reservation", token]):
        subprocess.run([*client, *args], capture_output=True, timeout=CLIENT_TIMEOUT_S, check=False)
    with contextlib.suppress(FileNotFoundError):
        Path(mark).unlink()
    return 0


if __name__ == "__main__":
    sys.exit(_guard(sys.argv[1:]))
