"""A batch of C-runner cases, one tar each way, with nothing but ``sh`` and ``tar`` on the board.

The host sends every case folder (``c_runner.request_files``) plus the driver ``run.sh`` as one
tar. On the board, ``sh run.sh RUNNER`` runs ``hil_c_runner`` once per case and writes ONE
stream to its stdout: per case ``<case>/started`` (the driver's and the runner's pid) as the
case begins, then ``<case>/out/`` (outputs, ``result.json``), ``<case>/stderr.txt`` and
``<case>/exit_code`` when it ends. A case's folder is removed on the board once sent, and the
driver kills its runner and stops as soon as the stream cannot be written (the host is gone).

With timing asked for, a case folder holds ``conditions.txt`` ("NAME<TAB>FILE" lines: the
board's clocks and temperature); the driver reads those files just before the runner starts
and just after it ends (``before.txt``, ``after.txt``; ``conditions``).

``read_stream`` unpacks that stream on the host as it arrives and says when each case starts
and ends; ``c_runner.read_request`` then turns the case's folder into an ``Observation``. The
stream is a concatenation of tar archives (one ``tar -cf -`` per step): the reader skips the
zero blocks between them and accepts only plain files and folders inside the batch's cases.
"""

from __future__ import annotations

import re
import shlex
import tarfile
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

DRIVER = "run.sh"
STARTED = "started"
EXIT_CODE = "exit_code"
BLOCK = 512  # tar block size
_CASE_NAME = re.compile(r"^[A-Za-z0-9_-]+$")

# `hil_case DIR ARGS...` per case follows; RUNNER may be relative to the caller's folder.
_DRIVER_HEAD = r"""#!/bin/sh
# A batch of hil_c_runner cases: sh run.sh RUNNER. Needs sh and tar only; its stdout is one
# tar stream (harness/boards/c_batch.py).
[ $# -eq 1 ] || { echo "usage: sh run.sh RUNNER" >&2; exit 2; }
case $1 in /*) runner=$1 ;; *) runner=$PWD/$1 ;; esac
cd "$(dirname "$0")" || exit 1
# $1 "NAME<TAB>FILE" lines: each file's first line (or "unreadable") as "NAME<TAB>VALUE".
hil_conditions() {
    while IFS='	' read -r name path; do
        value=
        read -r value <"$path" 2>/dev/null || [ -n "$value" ] || value=unreadable
        printf '%s\t%s\n' "$name" "$value"
    done <"$1"
}
hil_case() {
    dir=$1
    shift
    touch "$dir/conditions.txt" && hil_conditions "$dir/conditions.txt" >"$dir/before.txt"
    (cd "$dir" && exec "$runner" "$@" >stderr.txt 2>&1 </dev/null) &
    pid=$!
    echo "$$ $pid" >"$dir/started"
    tar -cf - "$dir/started" || { kill -9 "$pid"; exit 1; }
    wait "$pid"
    code=$?
    hil_conditions "$dir/conditions.txt" >"$dir/after.txt"
    mkdir -p "$dir/out" && echo "$code" >"$dir/exit_code" &&
        tar -cf - "$dir/out" "$dir/stderr.txt" "$dir/before.txt" "$dir/after.txt" \
            "$dir/exit_code" || exit 1
    rm -rf -- "$dir"
}
"""


CONDITIONS, BEFORE, AFTER = "conditions.txt", "before.txt", "after.txt"


def conditions_file(conditions: Mapping[str, str]) -> bytes:
    """``conditions.txt`` for the driver: name -> file on the board."""
    if any("\t" in text or "\n" in text for pair in conditions.items() for text in pair):
        raise ValueError(f"condition names and files hold no tabs or newlines: {conditions}")
    return "".join(f"{name}\t{path}\n" for name, path in conditions.items()).encode()


def conditions(folder: Path) -> dict[str, dict[str, str]]:
    """The readings of a finished case folder: {"before": {name: value}, "after": ...}; empty
    when the case read none."""
    found = {}
    for when, name in (("before", BEFORE), ("after", AFTER)):
        path = folder / name
        lines = path.read_text(errors="replace").splitlines() if path.is_file() else []
        found[when] = dict(line.split("\t", 1) for line in lines if "\t" in line)
    return found if any(found.values()) else {}


class StreamError(ValueError):
    """The board's result stream is not what ``run.sh`` writes."""


@dataclass(frozen=True)
class BatchCase:
    """One case of a batch: its folder name, its files, the runner's arguments after itself."""

    name: str
    files: Mapping[str, bytes]
    args: Sequence[str]


@dataclass(frozen=True)
class StreamEvent:
    """A case began (``pids``: the driver's and the runner's) or its files are all in."""

    case: str
    started: bool
    pids: tuple[int, ...] = ()


def batch_files(cases: Sequence[BatchCase]) -> dict[str, bytes]:
    """Every file of a batch, relative to its root: the case folders and ``run.sh``."""
    names = [case.name for case in cases]
    bad = [name for name in names if not _CASE_NAME.match(name)]
    if bad or len(set(names)) < len(names):
        raise ValueError(f"case folder names must be unique, of letters, digits, _ and -: {names}")
    files: dict[str, bytes] = {}
    lines = [_DRIVER_HEAD]
    for case in cases:
        files.update({f"{case.name}/{name}": data for name, data in case.files.items()})
        lines.append(shlex.join(["hil_case", case.name, *case.args]) + "\n")
    files[DRIVER] = "".join(lines).encode()
    return files


def read_stream(
    read: Callable[[int], bytes], root: Path, cases: Collection[str], max_member: int
) -> Iterator[StreamEvent]:
    """Unpack ``run.sh``'s stdout under ``root`` as it arrives; an event as a case starts or ends.

    ``read(n)`` returns ``n`` bytes, or fewer only at the end of the stream. A member larger
    than ``max_member`` bytes is refused before it is read (a tar header may announce 8 GiB).
    """
    while True:
        header = read(BLOCK)
        if not header:
            return
        if len(header) < BLOCK:
            raise StreamError("the stream ends inside a tar header")
        if not any(header):
            continue  # end-of-archive blocks and record padding between run.sh's archives
        info = _member(header, cases)
        if info.size > max_member:
            raise StreamError(f"member {info.name!r} of {info.size} bytes (at most {max_member})")
        padded = -(-info.size // BLOCK) * BLOCK
        data = read(padded) if padded else b""
        if len(data) < padded:
            raise StreamError(f"the stream ends inside {info.name!r}")
        content = data[: info.size]
        _unpack(root.joinpath(*info.name.split("/")), None if info.isdir() else content)
        if info.isdir():
            continue
        case, _, rest = info.name.partition("/")
        if rest == STARTED:
            yield StreamEvent(case, True, _pids(content))
        elif rest == EXIT_CODE:
            yield StreamEvent(case, False)


def _unpack(target: Path, content: bytes | None) -> None:
    """A folder (``content`` None) or a file; a member in the way of another is refused."""
    try:
        if content is None:
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
    except OSError as exc:  # a file where a folder goes, or the other way round
        raise StreamError(f"cannot unpack {target.name!r}: {exc.strerror}") from None


def _member(header: bytes, cases: Collection[str]) -> tarfile.TarInfo:
    """The member's header; only plain files and folders inside a case folder are accepted."""
    try:
        info = tarfile.TarInfo.frombuf(header, "utf-8", "surrogateescape")
    except tarfile.TarError as exc:
        raise StreamError(f"not a tar header: {exc}") from None
    parts = info.name.split("/")
    inside = parts[0] in cases and not {"", ".", ".."} & set(parts)
    if not inside or not (info.isfile() or info.isdir()):
        raise StreamError(f"unexpected member {info.name!r} of type {info.type!r}")
    return info


def _pids(content: bytes) -> tuple[int, ...]:
    words = content.split()
    pids = tuple(int(word) for word in words if word.isdigit())
    if len(pids) != 2 or len(words) != 2 or min(pids) < 2:
        raise StreamError(f"started marker {content[:40]!r} does not hold two pids")
    return pids
