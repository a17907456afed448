"""labgrid's own way of naming a target: an environment file (``--lg-env``).

labgrid users keep their targets in environment files; npu-hil reads the one part it needs
without importing labgrid: the target's ``RemotePlace`` (the place to lease), the
``coordinator_address`` option (else ``--lg-coordinator``, ``LG_COORDINATOR``) and the
``SSHDriver``'s ``keyfile`` (relative to the file). The board file of the platform (in
``--boards``, else beside the environment file) gives the rest: ``known_hosts``, SoC, work
directory and runtime, and the key when the environment names none::

    targets:
      main:
        resources:
          RemotePlace: {name: rk3562-a}
        drivers:
          SSHDriver: {keyfile: keys/hil_ed25519}
    options:
      coordinator_address: farm.lab:20408

Errors are ``BoardFileError``s naming the file and the key.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.boards.inventory import (
    Board,
    BoardFileError,
    Runtimes,
    board_path,
    check_files,
    load_board,
    load_inventory,
)
from harness.boards.settings import FarmSettings, SshSettings
from harness.safe_yaml import load_yaml

_PLACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_ADDRESS = re.compile(r"^[^\s]+$")


@dataclass(frozen=True)
class LabgridEnv:
    """What an environment file says of its target."""

    source: Path
    place: str
    coordinator: str | None
    key_file: Path | None


def load_env(path: Path) -> LabgridEnv:
    """The target of the labgrid environment file ``path``."""
    document = _mapping(path, load_yaml(path, BoardFileError), "", "an environment file")
    targets = _mapping(path, document.get("targets"), "targets", "targets")
    if len(targets) != 1 and "main" not in targets:
        raise BoardFileError(path, "targets", "<not shown>", "one target, or one named main")
    name = "main" if "main" in targets else next(iter(targets))
    target = _mapping(path, targets[name], f"targets.{name}", "a target")
    resources = _entries(path, target.get("resources", {}), f"targets.{name}.resources")
    drivers = _entries(path, target.get("drivers", {}), f"targets.{name}.drivers")
    where = f"targets.{name}.resources.RemotePlace"
    if "RemotePlace" not in resources:
        raise BoardFileError(path, where, None, "the target needs a RemotePlace (the place)")
    place = _mapping(path, resources["RemotePlace"], where, "RemotePlace").get("name")
    if not isinstance(place, str) or not _PLACE.match(place):
        raise BoardFileError(path, f"{where}.name", place, "a place name: letters, digits, . _ -")
    options = _mapping(path, document.get("options") or {}, "options", "options")
    coordinator = options.get("coordinator_address")
    if coordinator is not None and not (
        isinstance(coordinator, str) and _ADDRESS.match(coordinator)
    ):
        raise BoardFileError(path, "options.coordinator_address", coordinator, "HOST:PORT")
    ssh = drivers.get("SSHDriver") or {}
    where = f"targets.{name}.drivers.SSHDriver.keyfile"
    keyfile = _mapping(path, ssh, where.rsplit(".", 1)[0], "SSHDriver").get("keyfile")
    if keyfile is not None and not (isinstance(keyfile, str) and keyfile):
        raise BoardFileError(path, where, "<not shown>", "a path to the private key")
    key_file = board_path(path, keyfile, where) if keyfile else None
    if key_file is not None and not key_file.is_file():
        raise BoardFileError(path, where, "<not shown>", f"{key_file} does not exist")
    return LabgridEnv(path, place, coordinator, key_file)


def _mapping(path: Path, node: object, where: str, what: str) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise BoardFileError(path, where, "<not shown>", f"{what} is a mapping of keys")
    return node


def _entries(path: Path, node: object, where: str) -> dict[str, Any]:
    """labgrid's resources or drivers: a mapping by class, or a list of one-class mappings."""
    if isinstance(node, list):
        merged: dict[str, Any] = {}
        for index, item in enumerate(node):
            merged.update(_mapping(path, item, f"{where}[{index}]", "an entry"))
        return merged
    return _mapping(path, node, where, where.rsplit(".", 1)[1])


def env_platform_boards(
    path: Path,
    platform: str,
    runtimes: Runtimes,
    inventory: Path,
    wait_s: float,
    coordinator: str | None,
) -> list[Board]:
    """The boards of ``platform`` as the place the environment file ``path`` names: the board
    files of ``inventory`` (the environment file left out if it is there), else those beside
    the environment file. ValueError when there are none."""
    env = load_env(path)
    boards = []
    if inventory.is_dir() and inventory.resolve() != env.source.parent.resolve():
        boards = [b for b in load_inventory(inventory, runtimes) if b.platform == platform]
        for board in boards:
            check_files(board)
    boards = boards or boards_beside(env, platform, runtimes)
    if not boards:
        raise ValueError(
            f"{env.source}: no board file for platform {platform} in {inventory} or beside it "
            "(it gives the known_hosts, work directory and runtime)"
        )
    return env_boards(env, boards, wait_s, coordinator)


def boards_beside(env: LabgridEnv, platform: str, runtimes: Runtimes) -> list[Board]:
    """The board files of ``platform`` in the environment file's folder (the other
    ``*.yaml``/``*.yml`` files there are board files), their key files checked."""
    folder = env.source.parent
    paths = sorted(
        path
        for path in folder.iterdir()
        if path.suffix in (".yaml", ".yml") and path.is_file() and path != env.source
    )
    boards = [board for board in (load_board(path, runtimes) for path in paths)]
    found = [board for board in boards if board.platform == platform]
    for board in found:
        check_files(board)
    return found


def env_boards(
    env: LabgridEnv, boards: list[Board], wait_s: float, coordinator: str | None
) -> list[Board]:
    """``boards`` (the platform's board files) as the environment's place: its coordinator
    (else ``coordinator``), its key when it names one."""
    farm = FarmSettings(env.coordinator or coordinator, {"name": env.place}, wait_s)
    placed = []
    for board in boards:
        transport = board.transport
        if isinstance(transport, SshSettings) and env.key_file is not None:
            transport = dataclasses.replace(transport, key_file=env.key_file, agent=False,
                                            password_env=None)  # fmt: skip
        placed.append(dataclasses.replace(board, farm=farm, transport=transport))
    return placed
