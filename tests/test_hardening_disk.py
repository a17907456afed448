"""Caches and the journal on a disk that fails them (hardening, round 3): an entry damaged
behind a valid header is a miss, a cache that cannot write is a miss with one warning and
never a lost case, and a journal that cannot be written stops the run cleanly with what it
had gathered kept.

The full disks are real: a tmpfs of 64 KiB mounted for the test and filled (root only; where
mounting is not permitted the tests that need it are skipped).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.helpers.caches import FLOAT16, arrays, entry_body, job, older_entry
from tests.helpers.declared import MODELS
from tests.helpers.paths import SUITE
from tests.helpers.records import make_record

from harness.diskcache import (
    PACKED,
    CacheFolder,
    CacheWriteWarning,
    DamagedEntry,
    DiskCache,
    check_entry,
    claim,
    entries,
    mark_entry,
    pack,
    unpack,
)
from harness.judge.comparison_cache import ComparisonCache
from harness.models.reference import ORT, SPEC, ReferenceCache
from harness.results.journal import Journal, JournalWriteError, read_records
from harness.vendors.rknn.toolkit.convert import ConversionCache

MAXPOOL = {"kernel": [3, 3], "strides": [1, 1]}
FOLDER = CacheFolder("test", "test", "HIL_TEST_CACHE", "HIL_TEST_CACHE_MAX", "test entries")
CASES = [
    "rk3562/Pow/float16/values=2",
    "rk3562/Pow/float16/values=4",
    "rk3562/Expand/float16/typical",
]


@contextlib.contextmanager
def mounted(where: Path, size: str) -> Iterator[Path]:
    """An empty tmpfs of ``size`` mounted at ``where`` (skips the test where mount is not
    permitted)."""
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"mount is not permitted here: {done.stderr.decode(errors='replace')}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An empty 64 KiB tmpfs mounted for the test."""
    with mounted(tmp_path / "small-disk", "64k") as disk:
        yield disk


def fill(disk: Path) -> None:
    """Take every free byte of ``disk``."""
    with (disk / "filler").open("wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == 28, exc  # ENOSPC
    probe = disk / "probe"
    with pytest.raises(OSError, match="No space left"):
        probe.write_bytes(b"x" * 4096)
    probe.unlink(missing_ok=True)


# -- damaged entries --------------------------------------------------------------------------


def test_a_reference_entry_damaged_behind_a_valid_header_is_a_miss(tmp_path: Path) -> None:
    built = MODELS.build("MaxPool", MAXPOOL, seed=7)
    cache = ReferenceCache(tmp_path)
    expected = cache.references(built).outputs[ORT][0]  # the last array stored
    [entry] = entries(tmp_path)
    data = bytearray(entry.path.read_bytes())
    data[-1] ^= 0x40  # the last element's bytes: the header, shape and size stay valid
    entry.path.write_bytes(bytes(data))
    damaged = unpack(entry_body(entry.path))[1][-1]
    assert not np.array_equal(damaged, expected)  # what reading it would give
    np.testing.assert_array_equal(cache.references(built).outputs[ORT][0], expected)
    stored = unpack(entry_body(entries(tmp_path)[0].path))[1]
    np.testing.assert_array_equal(stored[-1], expected)


def test_a_comparison_entry_edited_into_other_valid_json_is_a_miss(tmp_path: Path) -> None:
    observed, references = arrays()
    cache = ComparisonCache(tmp_path)
    first = cache.compare_references(observed, references, "onnx-reference", FLOAT16)
    [entry] = entries(tmp_path)
    first_line, _ = entry.path.read_bytes().split(b"\n", 1)
    data, _ = unpack(entry_body(entry.path))
    data["passed"] = not data["passed"]
    entry.path.write_bytes(first_line + b"\n" + b"".join(pack(data, [])))
    assert cache.compare_references(observed, references, "onnx-reference", FLOAT16) == first


def test_a_converted_model_damaged_in_the_cache_is_built_again(tmp_path: Path) -> None:
    cache = ConversionCache(tmp_path)
    first = cache.convert(job(3))
    assert first.rknn_path is not None
    good = first.rknn_path.read_bytes()
    first.rknn_path.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
    again = cache.convert(job(3))
    assert not again.cached and again.rknn_path is not None
    assert again.rknn_path.read_bytes() == good


def test_an_entry_without_checksums_from_an_older_npu_hil_is_a_miss(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path, FOLDER)
    older_entry(cache.entry("ab" * 32), {"n": 1}, [], "")  # the marker before checksums
    assert cache.get_packed("ab" * 32, lambda data, arrays: data) is None
    assert not cache.entry("ab" * 32).exists()


def test_an_entry_with_blake2b_sums_from_an_older_npu_hil_is_still_checked(
    tmp_path: Path,
) -> None:
    # Entries before CRC-32 carry blake2b sums: read as hits while whole, a miss once damaged.
    cache = DiskCache(tmp_path, FOLDER)
    stored = [np.arange(6, dtype=np.float32).reshape(2, 3)]
    whole = b"".join(pack({"n": 1}, stored))
    blake2b = hashlib.blake2b(whole, digest_size=16).hexdigest()
    older_entry(cache.entry("ab" * 32), {"n": 1}, stored, {"blake2b": {PACKED: blake2b}})
    packed = cache.entry("ab" * 32) / PACKED
    found = cache.get_packed("ab" * 32, lambda data, arrays: (data, arrays))
    assert found is not None and found[0] == {"n": 1}
    np.testing.assert_array_equal(found[1][0], stored[0])
    packed.write_bytes(whole[:-1] + bytes([whole[-1] ^ 1]))
    assert cache.get_packed("ab" * 32, lambda data, arrays: data) is None
    assert not packed.parent.exists()  # removed, so that the next run stores a good one


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    files=st.dictionaries(
        st.sampled_from(["a.json", "b.npy", "c.rknn"]),
        st.binary(min_size=1, max_size=64),
        min_size=1,
    ),
    which=st.integers(min_value=0),
    where=st.integers(min_value=0),
    flip=st.integers(min_value=1, max_value=255),
    truncate=st.booleans(),
)
def test_any_damage_to_any_file_of_a_folder_entry_fails_its_check(
    tmp_path_factory: pytest.TempPathFactory,
    files: dict[str, bytes],
    which: int,
    where: int,
    flip: int,
    truncate: bool,
) -> None:
    # Folder entries (the conversions') are checked file by file before they are read.
    entry = tmp_path_factory.mktemp("cache") / "cd" / ("cd" * 32)
    entry.mkdir(parents=True)
    for name, data in files.items():
        (entry / name).write_bytes(data)
    mark_entry(entry)
    check_entry(entry)  # whole: passes
    name = sorted(files)[which % len(files)]
    damaged = bytearray(files[name])
    if truncate:
        del damaged[where % len(damaged) :]
    else:
        damaged[where % len(damaged)] ^= flip
    (entry / name).write_bytes(bytes(damaged))
    with pytest.raises(DamagedEntry, match=f"{name} does not match its checksum"):
        check_entry(entry)


# -- a full disk --------------------------------------------------------------------------------


def test_a_cache_on_a_full_disk_is_a_miss_with_one_warning(small_disk: Path) -> None:
    cache = ReferenceCache(small_disk / "ref")
    fill(small_disk)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for seed in (1, 2, 3):
            built = MODELS.build("MaxPool", MAXPOOL, seed=seed)
            assert cache.references(built).outputs[SPEC][0].size > 0
    full = [w for w in caught if issubclass(w.category, CacheWriteWarning)]
    assert len(full) == 1, [str(w.message) for w in caught]
    assert "cannot store cache entries (No space left on device)" in str(full[0].message)
    assert entries(small_disk / "ref") == []


def test_a_run_whose_caches_are_on_a_full_disk_keeps_every_cases_record(
    small_disk: Path, tmp_path: Path
) -> None:
    folders = {name: small_disk / name for name in ("sim", "ref", "cmp")}
    for folder in folders.values():
        claim(folder)  # caches in use, then the disk fills
    fill(small_disk)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--backend", "sim"]
    command += [f"{SUITE}::test_documented_limit[{case}]" for case in CASES]
    command += ["--results", str(tmp_path / "results"), "--hil-cache", str(folders["sim"])]
    command += ["--hil-reference-cache", str(folders["ref"])]
    command += ["--hil-comparison-cache", str(folders["cmp"])]
    env = {**os.environ, "PYTHONPATH": str(SUITE.parents[1])}
    run = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )
    output = run.stdout + run.stderr
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    records = read_records(tmp_path / "results")
    assert sorted(r.id for r in records) == sorted(CASES), output
    assert all(r.verdict != "infra-error" for r in records), [r.detail for r in records]
    warned = [w for r in records for w in r.warnings if "cannot store cache entries" in w]
    assert 1 <= len(warned) <= len(folders), warned  # once per cache, not once per case


def test_a_journal_on_a_full_disk_is_its_own_error_and_keeps_what_it_had(
    small_disk: Path,
) -> None:
    journal = Journal(small_disk)
    journal.append(make_record("rk3562/Pow/float16/values=2"))
    fill(small_disk)
    with pytest.raises(JournalWriteError, match=r"journal.jsonl: cannot append .* No space left"):
        for n in range(200):  # what is left of the journal's last block, then nothing
            journal.append(make_record(f"rk3562/Pow/float16/values={n + 3}"))
    kept = read_records(small_disk)
    assert kept[0].id == "rk3562/Pow/float16/values=2"


def test_a_run_whose_journal_fills_its_disk_stops_cleanly_with_what_it_had(
    small_disk: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "journal.jsonl").symlink_to(small_disk / "journal.jsonl")  # the journal alone
    fill(small_disk)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--backend", "sim"]
    command += [f"{SUITE}::test_documented_limit[{case}]" for case in CASES]
    command += ["--results", str(results), "--hil-cache", "off"]
    env = {**os.environ, "PYTHONPATH": str(SUITE.parents[1])}
    run = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )
    output = run.stdout + run.stderr
    assert run.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    assert "Interrupted: the journal cannot be written, the run stops" in output
    assert "No space left on device" in output
    assert "1 error" in output  # the first case; the run stopped there


def test_a_run_whose_case_folders_cannot_be_written_keeps_every_cases_record(
    small_disk: Path, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "cases").symlink_to(small_disk)  # the case folders alone on the full disk
    fill(small_disk)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--backend", "sim"]
    command += [f"{SUITE}::test_documented_limit[{case}]" for case in CASES]
    command += ["--results", str(results), "--hil-cache", "off"]
    env = {**os.environ, "PYTHONPATH": str(SUITE.parents[1])}
    run = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )
    output = run.stdout + run.stderr
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    records = read_records(results)
    assert sorted(r.id for r in records) == sorted(CASES), output
    for record in records:
        assert record.verdict == "infra-error", record.detail
        assert record.detail.startswith("writing the case folder: ") and "No space" in record.detail
    assert "3 errors" in output  # infrastructure errors, reported as such


@settings(max_examples=60, deadline=None)
@given(
    where=st.integers(min_value=0),
    flip=st.integers(min_value=1, max_value=255),
    truncate=st.booleans(),
)
def test_a_damaged_packed_entry_is_a_miss(where: int, flip: int, truncate: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        cache = DiskCache(Path(folder), FOLDER)
        key, stored = "ab" * 32, [np.arange(6, dtype=np.float32).reshape(2, 3)]
        cache.put_packed(key, {"kept": True}, stored)
        packed = cache.entry(key)
        damaged = bytearray(packed.read_bytes())
        if truncate:
            del damaged[where % len(damaged) :]
        else:
            damaged[where % len(damaged)] ^= flip
        packed.write_bytes(bytes(damaged))
        assert cache.get_packed(key, lambda data, arrays: (data, arrays)) is None
        assert not cache.entry(key).exists()
        cache.put_packed(key, {"kept": True}, stored)
        found = cache.get_packed(key, lambda data, arrays: (data, arrays))
        assert found is not None and found[0] == {"kept": True}
        np.testing.assert_array_equal(found[1][0], stored[0])
