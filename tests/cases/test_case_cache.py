"""Generated case lists kept on disk: a hit is the list generation gives, keyed by all it
depends on; only this user's folder and entries sealed with this user's key are trusted."""

from __future__ import annotations

import dataclasses
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from tests.helpers.cli import assert_usage_error, run_pytest

from harness.cases import case_cache
from harness.cases.case import CaseSet, Untested
from harness.cases.case_cache import CaseCache, key_path, package_digest
from harness.cases.operators import operator_cases
from harness.diskcache import CacheFolderError, entries, read_packed, write_packed
from harness.models.budget import ELEMENTS_ENV
from harness.vendors.rknn.documents.operators import operator_catalogue
from harness.vendors.rknn.vendor import VENDOR

MODELS = VENDOR.declarations


@pytest.fixture(autouse=True)
def state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A state folder of the test's own (beside its tmp_path, which the tests use as a
    cache): the user's case cache key is made there."""
    folder = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("XDG_STATE_HOME", str(folder))
    return folder


def generating_forbidden(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> CaseSet:
        raise AssertionError("generated again where the cache holds the list")

    monkeypatch.setattr(case_cache, "operator_cases", refuse)


# rv1103's cases expect a tuple (its CPU operators), rk3562's limits include adopted ones whose
# ids repeat stated ones: both read back as generated.
@pytest.mark.parametrize("platform", ["rk3562", "rv1103"])
def test_a_stored_case_list_reads_back_as_generation_gives_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, platform: str
) -> None:
    catalogue = operator_catalogue(platform)
    generated = operator_cases(catalogue, MODELS)
    assert CaseCache(tmp_path).cases(catalogue, MODELS) == generated
    assert len(entries(tmp_path)) == 1
    generating_forbidden(monkeypatch)
    stored = CaseCache(tmp_path).cases(catalogue, MODELS)
    assert stored == generated
    assert [type(case.layer_types) for case in stored.cases] == [tuple] * len(stored.cases)
    assert [u.limit for u in stored.unprobed] == [u.limit for u in generated.unprobed]


def test_the_size_budget_the_catalogue_and_the_operators_key_their_own_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catalogue = operator_catalogue("rk3562")
    cache = CaseCache(tmp_path)
    add = cache.cases(catalogue, MODELS, ops=["Add"])
    assert {case.op for case in add.cases} == {"Add"}
    assert {case.op for case in cache.cases(catalogue, MODELS, ops=["Sub"]).cases} == {"Sub"}
    monkeypatch.setenv(ELEMENTS_ENV, "5000")  # the widest Add models go over it
    small = cache.cases(catalogue, MODELS, ops=["Add"])
    assert small == operator_cases(catalogue, MODELS, ops=["Add"])
    assert len(small.cases) < len(add.cases)
    monkeypatch.delenv(ELEMENTS_ENV)
    fewer = {name: op for name, op in catalogue.operators.items() if name != "Sub"}
    edited = dataclasses.replace(catalogue, operators=fewer)
    assert cache.cases(edited, MODELS, ops=["Add", "Sub"]) == operator_cases(
        edited, MODELS, ops=["Add", "Sub"]
    )
    assert len(entries(tmp_path)) == 4


@pytest.mark.parametrize("odd", ["a limit not in the catalogue", "a value JSON cannot hold"])
def test_a_list_that_would_not_read_back_as_generated_is_not_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, odd: str
) -> None:
    catalogue = operator_catalogue("rk3562")
    generated = operator_cases(catalogue, MODELS, ops=["Add"])
    if odd.startswith("a limit"):
        foreign = dataclasses.replace(generated.unprobed[0].limit, id="Nothing/at/all")
        generated.unprobed.append(Untested(foreign, "made up"))
    else:
        case = generated.cases[0]
        generated.cases[0] = dataclasses.replace(case, params={**case.params, "odd": {1, 2}})
    monkeypatch.setattr(case_cache, "operator_cases", lambda *args, **kwargs: generated)
    assert CaseCache(tmp_path).cases(catalogue, MODELS, ops=["Add"]) is generated
    assert entries(tmp_path) == []


@pytest.mark.parametrize("damage", ["cut", "flipped"])
def test_a_damaged_entry_is_generated_and_stored_again(tmp_path: Path, damage: str) -> None:
    catalogue = operator_catalogue("rk3562")
    generated = CaseCache(tmp_path).cases(catalogue, MODELS, ops=["Add"])
    [entry] = entries(tmp_path)
    data = bytearray(entry.path.read_bytes())
    if damage == "cut":
        del data[len(data) // 2 :]
    else:
        data[len(data) // 2] ^= 0x01
    entry.path.write_bytes(bytes(data))
    assert CaseCache(tmp_path).cases(catalogue, MODELS, ops=["Add"]) == generated
    [again] = entries(tmp_path)
    assert again.size > len(data) if damage == "cut" else again.path.read_bytes() != data


def test_the_package_digest_covers_every_file_by_path_and_bytes(tmp_path: Path) -> None:
    def tree(name: str, files: dict[str, bytes]) -> Path:
        root = tmp_path / name
        for path, data in files.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(data)
        return root

    base = {"cases/a.py": b"x = 1\n", "data/ops.yaml": b"Add: {}\n"}
    digest = package_digest(tree("base", base))
    assert package_digest(tree("same", base)) == digest
    bytecode = {**base, "cases/__pycache__/a.cpython-311.pyc": b"\0"}
    assert package_digest(tree("bytecode", bytecode)) == digest
    changed = [
        {**base, "cases/a.py": b"x = 2\n"},  # code
        {**base, "data/ops.yaml": b"Add: {x: 1}\n"},  # data
        {"cases/b.py": b"x = 1\n", "data/ops.yaml": b"Add: {}\n"},  # a name
        {**base, "cases/c.py": b""},  # a new file
    ]
    digests = {package_digest(tree(f"changed{i}", files)) for i, files in enumerate(changed)}
    assert len(digests) == len(changed) and digest not in digests


def test_a_run_collects_the_same_cases_from_its_case_cache(tmp_path: Path) -> None:
    folder = tmp_path / "cases"
    listed = []
    for cache in ("off", str(folder), str(folder)):
        run = run_pytest(tmp_path, "--hil-case-cache", cache, "--results", str(tmp_path / "r"))
        assert run.returncode == 0, run.stdout + run.stderr
        listed.append([line for line in run.stdout.splitlines() if "::" in line])
        assert len(entries(folder)) == (0 if cache == "off" else 1)
    assert listed[0] == listed[1] == listed[2]
    assert len(listed[0]) > 1000


def test_a_rewritten_entry_is_not_trusted(tmp_path: Path) -> None:
    """An entry rewritten with a valid CRC (dropping 29 of 30 Pow cases) does not verify: the
    cases are generated again, and the forged entry replaced."""
    catalogue = operator_catalogue("rk3562")
    generated = CaseCache(tmp_path / "cases").cases(catalogue, MODELS, ops=["Pow"])
    assert len(generated.cases) > 1
    [entry] = entries(tmp_path / "cases")
    stored = read_packed(entry.path, lambda data, arrays: data)

    def forge(node: Any) -> None:  # whatever holds the cases, in any layout
        if isinstance(node, dict):
            if "cases" in node:
                del node["cases"][1:]
            for value in node.values():
                forge(value)

    forge(stored)
    entry.path.unlink()
    write_packed(entry.path, stored, [])
    assert CaseCache(tmp_path / "cases").cases(catalogue, MODELS, ops=["Pow"]) == generated
    [again] = entries(tmp_path / "cases")
    assert read_packed(again.path, lambda data, arrays: data) != stored


def test_the_cache_folder_is_made_private_and_the_key_0600(tmp_path: Path, state: Path) -> None:
    CaseCache(tmp_path / "new" / "cases")
    assert stat.S_IMODE((tmp_path / "new" / "cases").stat().st_mode) == 0o700
    assert key_path().parent == state / "npu-hil"
    assert stat.S_IMODE(key_path().stat().st_mode) == 0o600


def test_a_folder_others_can_write_is_refused_in_words(tmp_path: Path) -> None:
    team = tmp_path / "team-cases"
    team.mkdir()
    team.chmod(0o777)
    with pytest.raises(CacheFolderError, match=rf"{team} has mode 0777: others can change it"):
        CaseCache(team)
    run = run_pytest(tmp_path, "--hil-case-cache", str(team), "--results", str(tmp_path / "r"))
    assert_usage_error(run, f"--hil-case-cache: {team} has mode 0777", "chmod go-w")


@pytest.mark.skipif(os.getuid() != 0, reason="making another user's folder takes root")
def test_another_users_folder_is_refused(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, 65534, 65534)
    with pytest.raises(CacheFolderError, match=rf"{theirs} belongs to uid 65534"):
        CaseCache(theirs)


@pytest.mark.parametrize("fault", ["readable by others", "a link", "a FIFO", "no key"])
def test_a_key_file_not_the_users_alone_is_refused(tmp_path: Path, fault: str) -> None:
    key = key_path()
    key.parent.mkdir(parents=True)
    if fault == "readable by others":
        key.write_text("00" * 32 + "\n")
        key.chmod(0o644)
        expected = "has mode 0644: others can read it"
    elif fault == "a link":
        (tmp_path / "elsewhere").write_text("00" * 32 + "\n")
        key.symlink_to(tmp_path / "elsewhere")
        expected = "is a symbolic link, not a regular file"
    elif fault == "a FIFO":
        os.mkfifo(key, 0o600)  # read, it would hang
        expected = "is a special file"
    else:
        key.write_text("not a key\n")
        key.chmod(0o600)
        expected = "not a case cache key"
    with pytest.raises(CacheFolderError, match=f"{key}:? {expected}"):
        CaseCache(tmp_path / "cases")
