"""Board files: what loads, what is refused, and that errors name file, key and value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import paths
from tests.helpers.boards import board_doc, refused, write

from harness.boards.inventory import BoardFileError, Runtimes, load_board, load_inventory
from harness.boards.settings import SshSettings
from harness.vendors.rknn.runtimes import RUNTIMES, RknnLite

EXAMPLES = paths.ROOT / "boards" / "examples"
SECRET = "hunter2-Secret!"


def test_a_full_board_file_loads_with_paths_relative_to_the_file(tmp_path: Path) -> None:
    path = write(
        tmp_path / "boards",
        board_doc(port=2222, known_hosts="../kh", core_mask="0_1_2", tags=["nightly"]),
    )
    board = load_board(path, RUNTIMES)
    ssh = board.transport
    assert isinstance(ssh, SshSettings)
    assert ssh.key_file == tmp_path / "boards" / "keys" / "id_ed25519"
    assert ssh.known_hosts == tmp_path / "kh"
    assert (ssh.port, board.runtime.core_mask, board.tags) == (2222, "0_1_2", ("nightly",))
    assert (board.python, board.sysroot, ssh.agent, ssh.password_env) == (
        "python3",
        "/",
        False,
        None,
    )
    assert ssh.known_hosts.is_absolute()


def test_a_c_runner_board_names_its_runner_relative_to_the_file(tmp_path: Path) -> None:
    doc = board_doc(runtime="c-runner", c_runner="../build/rv1106/hil_c_runner", core_mask="all")
    board = load_board(write(tmp_path / "boards", doc), RUNTIMES)
    assert board.runtime.binary == tmp_path / "build" / "rv1106" / "hil_c_runner"
    assert load_board(write(tmp_path, board_doc()), RUNTIMES).runtime == RknnLite()


def test_defaults_known_hosts_to_the_users_file(tmp_path: Path) -> None:
    board = load_board(write(tmp_path, board_doc(auth={"agent": True})), RUNTIMES)
    assert board.transport == SshSettings(
        host="10.0.0.5",
        port=22,
        user="hil",
        key_file=None,
        agent=True,
        password_env=None,
        known_hosts=Path("~/.ssh/known_hosts").expanduser(),
    )


@pytest.mark.parametrize("where", ["auth", "top"])
def test_a_password_in_the_file_is_refused_without_showing_it(tmp_path: Path, where: str) -> None:
    doc = board_doc()
    if where == "auth":
        doc["auth"] = {"password": SECRET}
    else:
        doc["password"] = SECRET
    error = refused(write(tmp_path, doc))
    assert error.key_path == ("auth.password" if where == "auth" else "password")
    assert "password_env" in str(error)
    assert SECRET not in str(error) and SECRET not in repr(error.value)


def test_a_password_typed_into_password_env_is_not_echoed(tmp_path: Path) -> None:
    error = refused(write(tmp_path, board_doc(auth={"password_env": SECRET})))
    assert error.key_path.startswith("auth")
    assert SECRET not in str(error)


def test_two_auth_methods_are_refused(tmp_path: Path) -> None:
    error = refused(write(tmp_path, board_doc(auth={"agent": True, "password_env": "PW"})))
    assert error.key_path == "auth"
    assert "exactly one" in str(error)


@pytest.mark.parametrize(
    ("fields", "key", "value", "says"),
    [
        ({"platform": "rk9999"}, "platform", "rk9999", "platform must be one of rk3562, "),
        ({"platform": "RK3588"}, "platform", "RK3588", "; did you mean rk3588?"),
        ({"runtime": "tflite"}, "runtime", "tflite", "runtime must be one of "),
        ({"port": 70000}, "port", 70000, "port is a whole number from 1 to 65535"),
        (
            {"workdir": "relative/dir"},
            "workdir",
            "relative/dir",
            "workdir must be an absolute path on the board",
        ),
        ({"workdir": "/"}, "workdir", "/", "and not / itself"),
        ({"colour": "blue"}, "", None, "unknown key colour"),
        ({"knwon_hosts": "k"}, "", None, "unknown key knwon_hosts; did you mean known_hosts?"),
        (
            {"soc": "RK3588"},
            "soc",
            "RK3588",
            "soc is lower-case rk/rv and four digits, e.g. rk3588",
        ),
        ({"core_mask": 1}, "core_mask", 1, "quote the core mask"),
        ({"core_mask": "2", "platform": "rk3576", "soc": "rk3576"}, "core_mask", "2", "no such"),
        ({"core_mask": "0"}, "core_mask", "0", None),  # rk3588 has core 0: accepted
        (
            {"platform": "rv1106", "soc": "rv1106"},
            "runtime",
            "rknnlite",
            "does not support platform rv1106",
        ),
        ({"runtime": "c-runner"}, "c_runner", None, "runtime c-runner needs c_runner"),
        (
            {"c_runner": "build/hil_c_runner"},
            "c_runner",
            "build/hil_c_runner",
            "only for runtime c-runner",
        ),
        ({"runtime": "c-runner", "c_runner": ""}, "c_runner", "", "should be non-empty"),
        (
            {
                "runtime": "c-runner",
                "c_runner": "r",
                "platform": "rv1106",
                "soc": "rv1106",
                "core_mask": "all",
            },
            "core_mask",
            "all",
            "runs librknnmrt, which cannot choose NPU cores",
        ),
    ],
)
def test_bad_values_name_file_key_and_value(
    tmp_path: Path, fields: dict[str, Any], key: str, value: object, says: str | None
) -> None:
    path = write(tmp_path, board_doc(**fields))
    if says is None:
        assert load_board(path, RUNTIMES).runtime.core_mask == value
        return
    error = refused(path)
    assert error.key_path == key
    if value is not None:
        assert error.value == value
    assert says in str(error)
    # in words: never a regular expression, a schema keyword or a stand-in for the file
    assert not any(word in str(error) for word in ("^", "does not match", "<root>", "oneOf"))


def test_missing_required_key_is_named(tmp_path: Path) -> None:
    doc = board_doc()
    del doc["workdir"]
    error = refused(write(tmp_path, doc))
    assert str(error) == f"{error.file}: missing key workdir"


def test_not_yaml_is_refused_with_the_position(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: [unclosed\n")
    assert "not valid YAML" in str(refused(path))


def test_inventory_reads_top_level_files_only_and_sorts_by_name(tmp_path: Path) -> None:
    write(tmp_path, board_doc(name="zeta"))
    write(tmp_path, board_doc(name="alpha"), name="file-b")
    write(tmp_path / "examples", board_doc(name="example-only"))
    (tmp_path / "notes.txt").write_text("not a board")
    assert [b.name for b in load_inventory(tmp_path, RUNTIMES)] == ["alpha", "zeta"]


def test_inventory_refuses_duplicate_names(tmp_path: Path) -> None:
    first = write(tmp_path, board_doc(name="same"), name="a")
    second = write(tmp_path, board_doc(name="same"), name="b")
    with pytest.raises(BoardFileError) as info:
        load_inventory(tmp_path, RUNTIMES)
    assert str(second) in str(info.value) and str(first) in str(info.value)


def test_inventory_of_a_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(BoardFileError, match="no such board file or folder"):
        load_inventory(tmp_path / "nope", RUNTIMES)


def test_shipped_examples_are_valid_and_cover_four_socs_and_both_transports() -> None:
    boards = [load_board(path, RUNTIMES) for path in sorted(EXAMPLES.glob("*.yaml"))]
    assert {b.soc for b in boards} == {"rk3588", "rk3562", "rv1106", "rk3576"}
    assert {b.runtime.name for b in boards} == {"rknnlite", "c-runner"}
    assert {b.transport.kind for b in boards} == {"ssh", "adb"}


@dataclass(frozen=True)
class Toy:
    """A runtime of no vendor: all the loader asks of one is its name."""

    speed: int
    name: str = "toy"


class ToyKind:
    def __init__(self, key: str) -> None:
        self.platforms = ("toy-1",)
        self.keys = {key: {"type": "integer"}}

    def load(self, path: Path, document: Mapping[str, Any]) -> Toy:
        return Toy(document.get("speed", 1))


def test_runtimes_and_their_keys_come_from_the_registry_alone(tmp_path: Path) -> None:
    toys: Runtimes = {"toy": ToyKind("speed"), "other": ToyKind("lane")}
    board = load_board(write(tmp_path, board_doc(platform="toy-1", runtime="toy", speed=3)), toys)
    assert board.runtime == Toy(3)
    error = refused(write(tmp_path, board_doc(platform="toy-1", runtime="toy", lane=2)), toys)
    assert (error.key_path, error.value) == ("lane", 2)
    assert "only for runtime other (runtime: toy)" in str(error)
    assert refused(write(tmp_path, board_doc(platform="toy-1")), toys).key_path == "runtime"
    assert refused(write(tmp_path, board_doc(runtime="toy")), toys).key_path == "platform"
