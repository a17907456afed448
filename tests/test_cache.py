"""The shared caches' size cap and ``hil cache info|prune``, on real folders and real builds."""

from __future__ import annotations

import itertools
import json
import os
import time
import zlib
from pathlib import Path

import numpy as np
import pytest
from tests.helpers.caches import entry_body, job, older_entry

from harness.cli import main
from harness.diskcache import (
    PACKED,
    RECENT_S,
    CacheFolderError,
    DiskCache,
    arrays_digest,
    claim,
    content_key,
    entries,
    mark_entry,
    pack,
    parse_size,
    prune,
    usage,
    write_packed,
)
from harness.models.reference import ReferenceCache
from harness.vendors.rknn.toolkit.convert import ConversionCache
from harness.vendors.rknn.toolkit.simulator import SimCache, SimulatorPool
from harness.vendors.rknn.toolkit.simulator.cache import CACHE as SIM_FOLDER

HOUR = 3600.0


def entry(cache: Path, key: str, size: int, age_s: float, *, marked: bool = True) -> Path:
    """A folder of ``size`` bytes, last used ``age_s`` ago, under cache root ``cache``: an
    entry the cache wrote (``marked``), else someone's own folder."""
    if marked:
        claim(cache)
    folder = cache / key[:2] / key
    folder.mkdir(parents=True)
    (folder / "data").write_bytes(b"x" * size)
    if marked:
        mark_entry(folder)
    used = time.time() - age_s
    os.utime(folder, (used, used))
    return folder


def test_sizes_are_read_in_binary_units_and_bad_ones_named() -> None:
    assert parse_size("4096") == 4096
    assert parse_size("500M") == 500 * 1024**2
    assert parse_size("1.5G") == 1536 * 1024**2
    assert parse_size("2GiB") == 2 * 1024**3
    with pytest.raises(ValueError, match="not a size: 'lots'"):
        parse_size("lots")


def test_pruning_removes_the_least_recently_used_until_the_cache_fits(tmp_path: Path) -> None:
    old = entry(tmp_path, "aa01", 1000, 3 * HOUR)
    older = entry(tmp_path, "bb02", 1000, 4 * HOUR)
    newer = entry(tmp_path, "cc03", 1000, 2 * HOUR)
    (tmp_path / "cc" / ".staging-cc04").mkdir()  # a build in progress is not an entry
    removed = prune(tmp_path, 2000)
    assert [e.path for e in removed] == [older]
    assert sorted(e.path for e in entries(tmp_path)) == [old, newer]
    assert (tmp_path / "cc" / ".staging-cc04").is_dir()
    assert usage(tmp_path).size == 2000


def test_an_entry_used_recently_stays_even_above_the_cap(tmp_path: Path) -> None:
    stale = entry(tmp_path, "aa01", 1000, RECENT_S + HOUR)
    fresh = entry(tmp_path, "bb02", 1000, RECENT_S / 2)
    assert [e.path for e in prune(tmp_path, 0)] == [stale]
    assert [e.path for e in entries(tmp_path)] == [fresh]


def test_the_conversion_cache_keeps_its_cap_after_building(tmp_path: Path) -> None:
    cache = ConversionCache(tmp_path, cap=1)  # smaller than any entry
    first = cache.convert(job(3))
    assert first.rknn_path is not None and first.rknn_path.is_file()  # just used: kept
    long_ago = time.time() - RECENT_S - HOUR
    os.utime(first.rknn_path.parent, (long_ago, long_ago))
    second = cache.convert(job(5))
    assert not first.rknn_path.exists()  # least recently used, beyond the cap
    assert second.rknn_path is not None and second.rknn_path.is_file()
    hit = cache.convert(job(5))
    assert hit.cached and second.rknn_path.parent.stat().st_mtime >= long_ago + HOUR


def test_the_simulator_cache_keeps_its_cap_while_its_pool_writes(tmp_path: Path) -> None:
    stale = entry(tmp_path, "aa01", 1000, RECENT_S + HOUR)  # from a run long ago
    cache = SimCache(tmp_path, cap=1)  # smaller than any entry
    with SimulatorPool(cache=cache) as pool:
        (observation,) = pool.run_many([job(3)])
        assert not stale.exists()  # least recently used, beyond the cap: gone once written
        assert [e.path.name for e in entries(tmp_path)] == [cache.key(job(3))]  # just used
    assert observation.outputs is not None, observation.infra_error


def test_a_run_prunes_each_time_it_has_written_an_eighth_of_the_cap(tmp_path: Path) -> None:
    stale = entry(tmp_path, "aa01", 20_000, RECENT_S + HOUR)  # twice the cap, long unused
    cache = DiskCache(tmp_path, SIM_FOLDER, cap=10_000)

    def put(key: str, size: int) -> None:
        cache.put_packed(key, {}, [np.zeros(size, np.uint8)])

    put("bb" * 32, 1000)  # 1,000 bytes and the header written: under an eighth of 10,000
    assert stale.exists()
    put("cc" * 32, 300)  # 1,300 and the headers: past an eighth
    assert not stale.exists()
    assert sorted(e.path.name for e in entries(tmp_path)) == ["bb" * 32, "cc" * 32]
    put("dd" * 32, 1000)  # counted afresh from the pruning
    assert cache.get_packed("dd" * 32, lambda data, arrays: arrays[0].size) == 1000


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_hil_cache_info_and_prune(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conversions, sim, references = tmp_path / "rknn", tmp_path / "sim", tmp_path / "ref"
    entry(conversions, "aa01", 3000, 2 * HOUR)
    entry(conversions, "bb02", 1000, 3 * HOUR)
    entry(sim, "cc03", 500, 2 * HOUR)
    entry(references, "dd04", 2000, 2 * HOUR)
    entry(references, "ee05", 2000, 3 * HOUR)
    folders = ["--conversions", str(conversions), "--sim", str(sim)]
    folders += ["--references", str(references)]
    code, out, _ = cli(capsys, "cache", "info", "--json", *folders)
    assert code == 0
    info = json.loads(out)
    assert (info["conversions"]["entries"], info["conversions"]["bytes"]) == (2, 4000)
    assert (info["sim"]["entries"], info["sim"]["bytes"]) == (1, 500)
    assert (info["references"]["entries"], info["references"]["bytes"]) == (2, 4000)
    code, out, _ = cli(capsys, "cache", "prune", "--max-size", "3500", *folders)
    assert code == 0
    assert "conversions  removed 1 entries (1000 B); 1 left, 2.9 KiB of 3.4 KiB" in out
    assert "sim          removed 0 entries (0 B); 1 left" in out
    assert "references   removed 1 entries (2.0 KiB); 1 left" in out
    assert [e.path.name for e in entries(conversions)] == ["aa01"]
    assert [e.path.name for e in entries(references)] == ["dd04"]


def test_hil_cache_refuses_a_bad_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["cache", "prune", "--max-size", "huge", "--conversions", str(tmp_path)])
    assert stopped.value.code == 2
    assert "not a size: 'huge'" in capsys.readouterr().err
    for variable in (
        "HIL_CONVERSION_CACHE_MAX",
        "HIL_CACHE_MAX",
        "HIL_REFERENCE_CACHE_MAX",
        "HIL_COMPARISON_CACHE_MAX",
        "HIL_CASE_CACHE_MAX",
    ):
        with monkeypatch.context() as env:
            env.setenv(variable, "12X")
            code, _, err = cli(capsys, "cache", "info", "--conversions", str(tmp_path))
        assert code == 2
        assert f"{variable}: not a size: '12X'" in err


def test_each_cache_has_its_own_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    conversions, sim = tmp_path / "rknn", tmp_path / "sim"
    entry(conversions, "aa01", 3000, 2 * HOUR)
    entry(sim, "bb02", 3000, 2 * HOUR)
    monkeypatch.setenv("HIL_CONVERSION_CACHE_MAX", "4K")
    monkeypatch.setenv("HIL_CACHE_MAX", "2K")
    folders = ["--conversions", str(conversions), "--sim", str(sim)]
    folders += ["--references", str(tmp_path / "ref")]
    code, out, _ = cli(capsys, "cache", "info", "--json", *folders)
    assert code == 0
    info = json.loads(out)
    assert (info["conversions"]["cap_bytes"], info["sim"]["cap_bytes"]) == (4096, 2048)
    code, out, _ = cli(capsys, "cache", "prune", *folders)
    assert code == 0
    assert "conversions  removed 0 entries (0 B); 1 left" in out
    assert "sim          removed 1 entries (2.9 KiB); 0 left" in out


def test_pruning_removes_only_entries_the_cache_wrote(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    ours = entry(cache, "aa01", 1000, 3 * HOUR)
    personal = entry(cache, "aa02", 1000, 4 * HOUR, marked=False)  # put there by hand
    (cache / "bb").mkdir()
    (cache / "bb" / "photos").symlink_to(ours.parent)  # never followed
    removed = prune(cache, 0)
    assert [e.path for e in removed] == [ours]
    assert (personal / "data").read_bytes() == b"x" * 1000
    assert (cache / "bb" / "photos").is_symlink()
    assert entries(cache) == []


def foreign_folders(root: Path) -> list[Path]:
    """Two-level folders, a day old, as in a home or system folder."""
    folders = []
    for name in ("home/user", "usr/lib", "etc/ssh"):
        folder = root / name
        folder.mkdir(parents=True)
        (folder / "data").write_bytes(b"x" * 100)
        os.utime(folder, (time.time() - 24 * HOUR,) * 2)
        folders.append(folder)
    return folders


CACHE_OPTIONS = ("--sim", "--conversions", "--references")


def test_a_root_that_is_a_link_or_holds_foreign_content_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    system = tmp_path / "system"  # stands for /
    folders = foreign_folders(system)
    link = tmp_path / "link"
    link.symlink_to(system)
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("HIL_CACHE_MAX", "1K")
    for root, why in ((link, "a symbolic link"), (system, "not an npu-hil cache")):
        with pytest.raises(CacheFolderError, match=why):
            prune(root, 0)
        with pytest.raises(CacheFolderError, match=why):
            SimCache(root)
        with pytest.raises(CacheFolderError, match=why):
            ConversionCache(root)
        with pytest.raises(CacheFolderError, match=why):
            ReferenceCache(root)
        for command, refused in itertools.product(("prune", "info"), CACHE_OPTIONS):
            given = [arg for option in CACHE_OPTIONS for arg in (option, str(empty))]
            given[given.index(refused) + 1] = str(root)
            code, out, err = cli(capsys, "cache", command, *given)
            assert code == 2 and out == ""
            assert f"hil cache: {root}: {why}" in err
    assert "'etc', 'home', 'usr'" in err  # what is foreign, named
    assert all((folder / "data").is_file() for folder in folders)
    assert sorted(p.name for p in system.iterdir()) == ["etc", "home", "usr"]  # nothing marked
    assert list(empty.iterdir()) == []  # info and prune create and mark nothing


def test_cache_folders_follow_their_variables_set_after_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each cache's default folder is its variable's when asked (a test or a tool that sets
    HIL_CACHE after importing the harness gets that folder), else ~/.cache/npu-hil/<folder>."""
    variables = {"conversions": "HIL_CONVERSION_CACHE", "sim": "HIL_CACHE"}
    variables |= {"references": "HIL_REFERENCE_CACHE", "comparisons": "HIL_COMPARISON_CACHE"}
    variables |= {"cases": "HIL_CASE_CACHE"}
    for name, variable in variables.items():
        monkeypatch.setenv(variable, str(tmp_path / name))
    code, out, _ = cli(capsys, "cache", "info", "--json")
    assert code == 0
    info = json.loads(out)
    assert {name: info[name]["directory"] for name in variables} == {
        name: str(tmp_path / name) for name in variables
    }
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for variable in variables.values():
        monkeypatch.delenv(variable)
    code, out, _ = cli(capsys, "cache", "info", "--json")
    folders = {name: Path(found["directory"]) for name, found in json.loads(out).items()}
    cache_home = tmp_path / "home" / ".cache" / "npu-hil"
    assert folders == {"conversions": cache_home / "rknn", "sim": cache_home / "sim"} | {
        "references": cache_home / "ref",
        "comparisons": cache_home / "cmp",
        "cases": cache_home / "cases",
    }


def test_a_content_key_covers_each_arrays_bytes_dtype_and_shape() -> None:
    """The arrays are hashed in place; a strided view keys as its contiguous copy, and empty
    and 0-d arrays key like any other."""
    grid = np.arange(12, dtype=np.float32).reshape(3, 4)
    arrays = [grid, np.zeros((0, 3), np.float16), np.asarray(True)]

    def key(*groups: list[np.ndarray]) -> str:
        return content_key({"format": 1}, b"model", list(groups))

    assert key(arrays) == key([a.copy() for a in arrays])
    assert key([grid.T]) == key([np.ascontiguousarray(grid.T)])
    variants = [
        [grid.reshape(4, 3)],
        [grid.astype(np.int32)],
        [grid + np.float32(1e-6) * (np.arange(12).reshape(3, 4) == 5)],
        [grid[:, :2], grid[:, 2:]],  # the same bytes in other arrays
        [np.zeros((3, 0), np.float16)],
    ]
    keys = {key([grid]), *(key(v) for v in variants)}
    assert len(keys) == 1 + len(variants)
    assert key([grid], [grid]) != key([grid, grid])  # group boundaries count
    digests = {arrays_digest(group) for group in ([grid], *variants)}
    assert len(digests) == 1 + len(variants)  # a group's digest tells what its key tells
    assert arrays_digest([grid.T]) == arrays_digest([np.ascontiguousarray(grid.T)])


def test_a_packed_entry_gives_back_its_data_and_every_array_as_stored(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path, SIM_FOLDER)
    stored = [
        np.array(2.5),  # no dimensions
        np.zeros((0, 3), np.float32),  # no elements
        np.array([True, False, True]),
        np.arange(6, dtype=">i4").reshape(2, 3).T,  # big-endian, not C-contiguous
        np.linspace(-1, 1, 12, dtype=np.float16).reshape(1, 3, 4),
        np.arange(4, dtype=np.uint8),
    ]
    data = {"outputs": len(stored), "name": "x", "nan": None}
    cache.put_packed("ef" * 32, data, stored)
    found = cache.get_packed("ef" * 32, lambda data, arrays: (data, arrays))
    assert found is not None and found[0] == data
    assert len(found[1]) == len(stored)
    for got, want in zip(found[1], stored, strict=True):
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        np.testing.assert_array_equal(got, want)
        got[...] = 0  # writable, as np.load gives: a caller's change is its own
    assert cache.get_packed("ef" * 32, lambda data, arrays: arrays[2].tolist()) == [1, 0, 1]
    with pytest.raises(TypeError, match="object"):
        cache.put_packed("12" * 32, {}, [np.array([object()])])


def test_writing_a_packed_entry_counts_its_bytes_and_an_entry_there_stays(
    tmp_path: Path,
) -> None:
    entry = tmp_path / "ab" / ("ab" * 32)
    written = write_packed(entry, {"n": 1}, [np.arange(100, dtype=np.float32)])
    assert written == entry.stat().st_size > 400  # the cap counts what it holds
    before = entry.read_bytes()
    assert write_packed(entry, {"n": 2}, [np.zeros(3, np.float32)]) == 0
    assert entry.read_bytes() == before


def test_an_array_stored_twice_in_an_entry_takes_its_bytes_once(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path, SIM_FOLDER)
    reference = np.linspace(-2, 2, 4096, dtype=np.float32).reshape(1, 4, 32, 32)
    other = reference.copy()
    other.reshape(-1)[7] = np.nextafter(other.reshape(-1)[7], np.float32(9))  # one ulp apart
    signed_zeros = [np.array([-0.0, np.nan], np.float32), np.array([0.0, np.nan], np.float32)]
    stored = [reference, reference.copy(), other, *signed_zeros]
    cache.put_packed("ab" * 32, {}, stored)
    body = entry_body(cache.entry("ab" * 32))
    header_size = int.from_bytes(body[:8], "little")
    # the second reference is written once; the one-ulp neighbour and +0.0 are not the same
    assert len(body) == 8 + header_size + 2 * reference.nbytes + 2 * 8
    found = cache.get_packed("ab" * 32, lambda data, arrays: arrays)
    assert found is not None
    for got, want in zip(found, stored, strict=True):
        assert got.tobytes() == want.tobytes()
    found[1][...] = 0  # each array is its own: the first is untouched
    assert found[0].tobytes() == reference.tobytes()


def test_packed_entries_are_one_file_each_pruned_as_folder_entries_are(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path, SIM_FOLDER)
    keys = ["ab" * 32, "ac" * 32]
    for key in keys:
        cache.put_packed(key, {"key": key}, [np.arange(100, dtype=np.float32)])
    conversion = entry(tmp_path, "cd" * 32, 1000, 2 * HOUR)  # a folder entry beside them
    shard = tmp_path / "ab"
    assert sorted(p.name for p in shard.iterdir()) == ["ab" * 32]  # no staging file left
    assert cache.entry(keys[0]).is_file()
    # Not entries: a lock, a note, a key in another key's shard, a link named as a key.
    others = [shard / f"{'ab' * 32}.lock", shard / "notes", shard / ("cd" * 32)]
    for other in others:
        other.write_text("kept")
    (shard / ("ab" * 31 + "ff")).symlink_to(cache.entry(keys[1]))
    long_ago = time.time() - RECENT_S - HOUR
    for key in keys:
        os.utime(cache.entry(key), (long_ago, long_ago))
    listed = {e.path.name: e.size for e in entries(tmp_path)}
    assert sorted(listed) == sorted([*keys, conversion.name])
    assert listed[keys[0]] == cache.entry(keys[0]).stat().st_size
    assert {e.path for e in prune(tmp_path, 0)} == {*map(cache.entry, keys), conversion}
    assert all(other.read_text() == "kept" for other in others)
    assert (shard / ("ab" * 31 + "ff")).is_symlink()


def crc32(data: bytes) -> str:
    return f"{zlib.crc32(data):08x}"


def test_a_packed_entry_an_older_npu_hil_wrote_as_a_folder_still_hits(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path, SIM_FOLDER)
    stored = [np.arange(6, dtype=np.float32).reshape(2, 3)]
    whole = b"".join(pack({"n": 1}, stored))
    older_entry(cache.entry("ab" * 32), {"n": 1}, stored, {"crc32": {PACKED: crc32(whole)}})
    found = cache.get_packed("ab" * 32, lambda data, arrays: (data, arrays))
    assert found is not None and found[0] == {"n": 1}
    np.testing.assert_array_equal(found[1][0], stored[0])
    assert [e.path for e in entries(tmp_path)] == [cache.entry("ab" * 32)]
