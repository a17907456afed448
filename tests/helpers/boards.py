"""Board files and board-side settings that several board tests share."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.fakes.adbd import AdbServer

from harness.boards.inventory import (
    BoardFileError,
    Runtimes,
    load_board,
)
from harness.targets.job import Job
from harness.vendors.rknn.runtimes import RUNTIMES


def board_doc(**fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": "rk3588-a",
        "host": "10.0.0.5",
        "user": "hil",
        "auth": {"key_file": "keys/id_ed25519"},
        "soc": "rk3588",
        "platform": "rk3588",
        "workdir": "/tmp/npu-hil",
        "runtime": "rknnlite",
    }
    doc.update(fields)
    return doc


def write(folder: Path, doc: dict[str, Any], name: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name or doc['name']}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def refused(path: Path, runtimes: Runtimes = RUNTIMES) -> BoardFileError:
    with pytest.raises(BoardFileError) as info:
        load_board(path, runtimes)
    assert str(path) in str(info.value)
    return info.value


SERIAL = "hil-evb-1"


def adb_board_file(server: AdbServer, folder: Path, sysroot: Path, **fields: object) -> Path:
    device = server.devices[SERIAL]
    assert device is not None
    document: dict[str, object] = {
        "name": "loopback-adb",
        "adb": {"serial": SERIAL, "server_host": "127.0.0.1", "server_port": server.port},
        "soc": "rk3562",
        "platform": "rk3562",
        "python": sys.executable,
        "workdir": str(device / "work dir"),
        "runtime": "simulator-stand-in",
        "sysroot": str(sysroot),
        **fields,
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{document['name']}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


BOARD_TOOLS = (
    "sh", "tar", "cat", "mkdir", "rm", "rmdir", "mv", "chmod", "kill", "date", "stat", "touch",
    "dirname", "tr", "grep", "strings", "df", "tail", "sha256sum",
)  # fmt: skip


def recipe(job: Job) -> dict[str, bytes]:
    return {"reproduce.py": b"print('reproduce')\n", "toolkit.json": b"{}\n"}
