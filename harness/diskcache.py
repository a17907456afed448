"""The on-disk caches (simulator results, host references, comparisons, conversions): keys,
whole entries, size caps, and what is theirs.

Each keeps its entries under ``<directory>/<key[:2]>/<key>``, keyed by ``content_key`` over
everything that decides the entry. An entry is written beside its place under a dot-name and
renamed into place, so a reader sees it whole or not at all.

Most entries are one file (``write_packed``): a line naming it an npu-hil cache entry with the
CRC-32 of what follows, then ``pack``'s bytes, a JSON header and the entry's arrays. A hit
reads the file once and checks it against its checksum as read (``read_packed``); one damaged
later, even behind a valid header, is a miss and is removed. One file, not a folder holding a
data file and a marker: on ext4 each new file or folder costs a few hundred microseconds of
kernel time (0.3-0.5 ms an inode on a 2-core test host, against microseconds to write its
bytes), and a cold case stores three entries. A folder entry (the conversions', whose compiled
model the board is sent as is) holds ``ENTRY_MARKER``, with a checksum of each of its files
(CRC-32; blake2b in entries of an npu-hil from before), checked before the entry is read
(``check_entry``); packed entries of an npu-hil from before single-file entries are such
folders, and are still read. An entry without checksums (from before them) is a miss.

A hit touches the entry, so its modification time is its last use. Pruning removes the least
recently used entries until the cache fits its cap, but never one used in the last
``RECENT_S`` seconds: a run (another pytest-xdist worker, say) may be reading it. An entry is
renamed away before it is deleted.

A cache deletes only what it wrote. Its root holds ``ROOT_MARKER``, written when the cache
took the folder (``claim``: missing or empty folders only); a folder entry holds its marker,
and a file entry is named as a key in its key's shard, by which nothing else is named there.
A root that is a symbolic link, or that holds anything without the root marker (someone's own
folders, or a cache of an npu-hil from before the markers), is refused; inside a root, what is
not marked is left alone.

``DiskCache`` is what each cache builds on: its claimed folder, its cap, and packed entries
read and written under a key. It also prunes while a run writes, each time an eighth of the
cap has been written, so a long run's cache stays near its cap instead of growing until the
session ends. An entry it cannot write (a full disk, a read-only folder) is not stored: the
value computed is used all the same, and the first such failure is a ``CacheWriteWarning``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import stat
import tempfile
import time
import warnings
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from harness.sizes import parse_size

T = TypeVar("T")
RECENT_S = 600.0
ROOT_MARKER = ".npu-hil-cache"
ENTRY_MARKER = ".npu-hil-entry"
DEFAULT_CAP = 2 * 1024**3


class CacheFolderError(ValueError):
    """A folder that is not, and cannot become, an npu-hil cache; the message names it."""


class DamagedEntry(ValueError):
    """An entry whose files are not those its checksums describe; the message says which."""


class CacheWriteWarning(UserWarning):
    """A cache could not store an entry (the disk is full, say): the run goes on without."""


@dataclass(frozen=True)
class CacheFolder:
    """Where one cache lives by default and what caps it: its folder under
    ``~/.cache/npu-hil/`` unless ``dir_env`` names another, its cap in ``cap_env``."""

    key: str  # its name in ``hil cache`` (``--<key>``, the output's first column)
    folder: str  # under ~/.cache/npu-hil/
    dir_env: str
    cap_env: str
    holds: str  # what it keeps, for help texts

    def directory(self) -> Path:
        """``dir_env``'s folder, else ``~/.cache/npu-hil/<folder>``: read when asked."""
        return Path(
            os.environ.get(self.dir_env) or Path.home() / ".cache" / "npu-hil" / self.folder
        )

    def cap(self) -> int:
        """The cap in ``cap_env``, else ``DEFAULT_CAP``; a bad value names the variable."""
        return cap_from_env(self.cap_env)


@dataclass(frozen=True)
class Entry:
    path: Path
    used: float  # last use, seconds since the epoch
    size: int  # bytes


@dataclass(frozen=True)
class Usage:
    directory: Path
    entries: int
    size: int
    oldest: float | None  # the least recent use
    newest: float | None


class DiskCache:
    """One cache's folder (claimed: ``claim``) and cap (default: ``folder``'s variable, else
    ``DEFAULT_CAP``): entries read, computed and written by key, pruned to the cap."""

    PRUNE_EVERY = 8  # prune when a run has written cap / PRUNE_EVERY bytes since the last

    def __init__(self, directory: Path, folder: CacheFolder, cap: int | None = None) -> None:
        """A folder that is not a cache's raises CacheFolderError."""
        self.directory = Path(directory)
        claim(self.directory)
        self.cap = folder.cap() if cap is None else cap
        self._written = 0  # bytes written since the last pruning
        self._warned = False  # one CacheWriteWarning per cache, not one per case

    def entry(self, key: str) -> Path:
        return entry_path(self.directory, key)

    def get_packed(self, key: str, read: Callable[[Any, list[np.ndarray]], T]) -> T | None:
        """``read(data, arrays)`` of the packed entry under ``key``, or None on a miss
        (``read_packed``)."""
        return read_packed(self.entry(key), read)

    def put_packed(self, key: str, data: Any, arrays: Sequence[np.ndarray]) -> None:
        """Store ``data`` (JSON) and ``arrays`` under ``key`` (``write_packed``); every
        cap / PRUNE_EVERY bytes written, keep the cache to its cap. An entry that cannot be
        written is not stored (a ``CacheWriteWarning`` the first time)."""
        try:
            written = write_packed(self.entry(key), data, arrays)
        except OSError as exc:
            if not self._warned:
                self._warned = True
                warnings.warn(
                    CacheWriteWarning(
                        f"{self.directory}: cannot store cache entries ({exc.strerror or exc}); "
                        "the run goes on, computing again what it cannot keep"
                    ),
                    stacklevel=2,
                )
            return
        self._written += written
        if self._written * self.PRUNE_EVERY >= self.cap:
            self.keep_to_cap()

    def keep_to_cap(self) -> None:
        """Remove the least recently used entries until the folder fits the cap (none used
        in the last ``RECENT_S`` seconds: another process may be reading it)."""
        self._written = 0
        prune(self.directory, self.cap)


def cap_from_env(variable: str, default: int = DEFAULT_CAP) -> int:
    """The cap in ``variable`` (a size), else ``default``; a bad value names the variable."""
    text = os.environ.get(variable)
    if not text:
        return default
    try:
        return parse_size(text)
    except ValueError as exc:
        raise ValueError(f"{variable}: {exc}") from None


def refusal(directory: Path) -> str | None:
    """Why ``directory`` cannot be a cache's root, or None: it is missing, empty, or marked."""
    root = Path(directory)
    if root.is_symlink():
        return f"{root}: a symbolic link; give the cache's own folder"
    if not root.exists() or _marked(root / ROOT_MARKER):
        return None
    if not root.is_dir():
        return f"{root}: not a folder"
    try:
        names = sorted(child.name for child in root.iterdir())
    except OSError as exc:
        return f"{root}: unreadable: {exc.strerror}"
    if not names:
        return None
    shown = ", ".join(repr(name[:60]) for name in names[:3]) + (", ..." if len(names) > 3 else "")
    return (
        f"{root}: not an npu-hil cache (no {ROOT_MARKER}) and not empty ({shown}); a cache "
        "from an older npu-hil, or someone's own folder: remove it or give another folder"
    )


def claim(directory: Path) -> None:
    """Make ``directory`` a cache's root (created and marked), or raise CacheFolderError."""
    problem = refusal(directory)
    if problem is not None:
        raise CacheFolderError(problem)
    root = Path(directory)
    try:
        root.mkdir(parents=True, exist_ok=True)
        if not _marked(root / ROOT_MARKER):
            (root / ROOT_MARKER).write_text("npu-hil cache: it removes only its marked entries\n")
    except OSError as exc:
        raise CacheFolderError(f"{root}: not a usable folder: {exc.strerror}") from None


def content_key(
    header: dict[str, Any], model: bytes, array_groups: Sequence[Sequence[np.ndarray]]
) -> str:
    """sha256 (hex) of a JSON header, a model and groups of arrays (dtype, shape and bytes).

    Every chunk is length-prefixed so that boundaries count.
    """
    digest = hashlib.sha256()
    _add(digest, json.dumps(header, sort_keys=True).encode())
    _add(digest, model)
    for arrays in array_groups:
        _add_arrays(digest, arrays)
    return digest.hexdigest()


def arrays_digest(arrays: Sequence[np.ndarray]) -> str:
    """sha256 (hex) of one group of arrays as ``content_key`` hashes it: what names them in a
    key where they would otherwise be hashed again (a cache entry keeps its arrays' digest)."""
    digest = hashlib.sha256()
    _add_arrays(digest, arrays)
    return digest.hexdigest()


def _add(digest: Any, chunk: bytes | memoryview) -> None:
    digest.update(memoryview(chunk).nbytes.to_bytes(8, "little"))
    digest.update(chunk)


def _add_arrays(digest: Any, arrays: Sequence[np.ndarray]) -> None:
    _add(digest, str(len(arrays)).encode())
    for array in map(np.ascontiguousarray, arrays):
        _add(digest, f"{array.dtype.str}{array.shape}".encode())
        _add(digest, array.reshape(-1).view(np.uint8).data)  # the bytes in place, not a copy


def entry_path(directory: Path, key: str) -> Path:
    return Path(directory) / key[:2] / key


def read_packed(entry: Path, read: Callable[[Any, list[np.ndarray]], T]) -> T | None:
    """``read(data, arrays)`` of a packed entry (``write_packed``), or None on a miss. The file
    is read once and checked against its checksum as read. Whatever fails (an unreadable or
    damaged file, bad JSON, or ``read`` itself) makes the entry a miss, removed (if the cache
    wrote it) so that the next run stores a good one."""
    return _hit(entry, lambda: read(*unpack(_packed_bytes(entry))))


def _hit(entry: Path, load: Callable[[], T]) -> T | None:
    if not entry.exists():
        return None
    try:
        value = load()
    except Exception:  # whatever the damage, the entry can be produced again
        remove(entry)
        return None
    touch(entry)  # its last use: the cap removes the least recently used first
    return value


PACKED = "entry.bin"  # the one file of a packed entry kept as a folder (an older npu-hil's)
_LENGTH = 8  # bytes of the header's length, little-endian, before the header
_FIRST_LINE = b"npu-hil cache entry, crc32 "  # then the CRC-32 of the rest, 8 hex digits, \n
_FIRST_LINE_SIZE = len(_FIRST_LINE) + 9


def pack(data: Any, arrays: Sequence[np.ndarray]) -> list[bytes | memoryview]:
    """``data`` (JSON) and ``arrays`` as the chunks of one byte string: the length of a JSON
    header (``data`` and each array's dtype and shape), the header, then each array's bytes
    in order. Parsing an .npy header cost more than reading its data, so arrays are not .npy
    files. An array bit for bit the same as an earlier one is written once: its layout names
    the earlier one's index (two host references of a data-movement operator agree exactly: a
    third of the full matrix's reference cache)."""
    contiguous = [np.asarray(array, order="C") for array in arrays]
    for array in contiguous:
        if array.dtype.hasobject:  # its bytes are pointers
            raise TypeError(f"a cache entry cannot hold an array of {array.dtype} objects")
    layout: list[list[Any]] = []
    for index, array in enumerate(contiguous):
        same = next((i for i in range(index) if _identical(contiguous[i], array)), None)
        layout.append([array.dtype.str, list(array.shape), *([] if same is None else [same])])
    header = json.dumps({"data": data, "arrays": layout}).encode()
    chunks: list[bytes | memoryview] = [len(header).to_bytes(_LENGTH, "little"), header]
    for array, spec in zip(contiguous, layout, strict=True):
        if len(spec) == 2:
            chunks.append(array.reshape(-1).view(np.uint8).data)
    return chunks


def write_packed(entry: Path, data: Any, arrays: Sequence[np.ndarray]) -> int:
    """Store ``data`` and ``arrays`` (``pack``) as the file ``entry``, after its first line,
    which marks it as the cache's own and holds the CRC-32 of the rest; the bytes written. It
    is written beside ``entry`` under a dot-name and renamed into place. An entry already
    there stays (another process may have stored it meanwhile): nothing is written."""
    if entry.exists():
        return 0
    chunks = pack(data, arrays)
    checksum = 0
    for chunk in chunks:
        checksum = zlib.crc32(chunk, checksum)
    entry.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(prefix=f".{entry.name}-", dir=entry.parent)
    try:
        with open(handle, "wb") as file:
            written = file.write(b"%s%08x\n" % (_FIRST_LINE, checksum))
            for chunk in chunks:
                written += file.write(chunk)
        os.rename(staging, entry)
    except OSError:
        if not entry.exists():  # losing the rename race to another process is fine
            raise
        return 0
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staging)
    return written


def _packed_bytes(entry: Path) -> memoryview:
    """What ``pack`` wrote into ``entry`` (writable), checked against its checksum; an
    older npu-hil's folder entry's file as ``check_entry`` checks it. DamagedEntry if not."""
    try:
        blob = _read_whole(entry)
    except IsADirectoryError:
        return _checked_file(entry, PACKED)
    first, rest = bytes(blob[:_FIRST_LINE_SIZE]), blob[_FIRST_LINE_SIZE:]
    if not (first.startswith(_FIRST_LINE) and first.endswith(b"\n")):
        raise DamagedEntry(f"{entry}: not an npu-hil cache entry")
    if first[len(_FIRST_LINE) : -1] != b"%08x" % zlib.crc32(rest):
        raise DamagedEntry(f"{entry}: does not match its checksum")
    return rest


def _read_whole(path: Path | str) -> memoryview:
    """The bytes of the file ``path``, writable: read in place, not bytes then copied, into
    memory not zeroed first (a bytearray's is): entries of large outputs run to hundreds of
    MB, and their arrays are views of it. A file cut short meanwhile fails its checksum."""
    with open(path, "rb", buffering=0) as handle:
        buffer = np.empty(os.fstat(handle.fileno()).st_size, np.uint8).data
        return buffer[: handle.readinto(buffer)]


def _identical(a: np.ndarray, b: np.ndarray) -> bool:
    """Same dtype, shape and bytes (NaN payloads and signed zeros included)."""
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and np.array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8))
    )


def unpack(blob: bytes | bytearray | memoryview) -> tuple[Any, list[np.ndarray]]:
    """``data`` and the arrays ``pack`` wrote (writable, as np.load gives them: views of
    ``blob`` when it is writable, a bytearray or a writable memoryview, which is then theirs);
    ValueError when ``blob`` is not exactly what ``pack`` writes."""
    size = int.from_bytes(blob[:_LENGTH], "little")
    header = json.loads(bytes(blob[_LENGTH : _LENGTH + size]).decode("utf-8"))
    writable = isinstance(blob, bytearray) or (isinstance(blob, memoryview) and not blob.readonly)
    buffer = blob if writable else bytearray(blob)
    offset = _LENGTH + size
    arrays: list[np.ndarray] = []
    for dtype_str, shape, *same in header["arrays"]:
        if same:  # written once, at an earlier index: a copy, so that each is its own
            earlier = arrays[same[0]] if 0 <= same[0] < len(arrays) else None
            if earlier is None or (earlier.dtype.str, list(earlier.shape)) != (dtype_str, shape):
                raise ValueError("a packed entry naming an array it does not hold")
            arrays.append(earlier.copy())
            continue
        dtype = np.dtype(dtype_str)
        count = math.prod(shape)
        if offset + count * dtype.itemsize > len(buffer):
            raise ValueError("a packed entry shorter than its header says")
        array = np.frombuffer(buffer, dtype=dtype, count=count, offset=offset)
        arrays.append(array.reshape(tuple(shape)))
        offset += count * dtype.itemsize
    if offset != len(buffer):
        raise ValueError("a packed entry longer than its header says")
    return header["data"], arrays


def mark_entry(staging: Path) -> None:
    """Mark a staged entry as the cache's own (before it is renamed into place), the marker
    holding the checksum of each of its files (``check_entry``)."""
    sums = {name: _checksum(path, _CHECKSUMS) for name, path in _entry_files(staging)}
    (staging / ENTRY_MARKER).write_text(json.dumps({_CHECKSUMS: sums}, sort_keys=True))


def check_entry(entry: Path) -> None:
    """Raise DamagedEntry unless ``entry``'s files are exactly those its marker has checksums
    of, each with its checksum (OSError when it cannot be read)."""
    algorithm, sums, files = _listed(entry)
    for name, path in files.items():
        if _checksum(path, algorithm) != sums[name]:
            raise DamagedEntry(f"{entry}: {name} does not match its checksum")


def _checked_file(entry: Path, name: str) -> memoryview:
    """The bytes of folder entry ``entry``'s one file ``name`` (writable), checked as
    ``check_entry`` checks."""
    algorithm, sums, files = _listed(entry)
    if list(files) != [name]:
        raise DamagedEntry(f"{entry}: not an entry of one file {name}")
    blob = _read_whole(files[name])
    if _DIGESTS[algorithm](blob) != sums[name]:
        raise DamagedEntry(f"{entry}: {name} does not match its checksum")
    return blob


def _listed(entry: Path) -> tuple[str, dict[str, str], dict[str, str]]:
    """The checksum algorithm of ``entry``'s marker, its checksums and the entry's files
    (name -> path), which must be the files the checksums name (DamagedEntry)."""
    try:
        marker = json.loads((entry / ENTRY_MARKER).read_bytes())
        (algorithm,) = (name for name in marker if name in _DIGESTS)
        sums = marker[algorithm]
    except (ValueError, TypeError, AttributeError):
        raise DamagedEntry(f"{entry}: no checksums in its marker") from None
    files = dict(_entry_files(entry))
    if not isinstance(sums, dict) or sorted(sums) != sorted(files):
        raise DamagedEntry(f"{entry}: its files are not those its checksums name")
    return algorithm, sums, files


def _entry_files(folder: Path) -> list[tuple[str, str]]:
    """(name, path) of every file of an entry (entries are flat) but its marker: os.scandir
    and plain strings, as every hit pays for this listing."""
    with os.scandir(folder) as found:
        return sorted(
            (item.name, item.path)
            for item in found
            if item.name != ENTRY_MARKER and not item.is_dir(follow_symlinks=False)
        )


def _checksum(path: str, algorithm: str) -> str:
    # Entries are small enough to hash in one piece.
    with open(path, "rb") as handle:
        return _DIGESTS[algorithm](handle.read())


# A checksum catches damage, it is not a key: CRC-32, which every hit pays for, reads twice as
# fast as blake2b here. Entries written before it carry blake2b sums, still checked as such.
_DIGESTS: dict[str, Callable[[bytes | bytearray | memoryview], str]] = {
    "crc32": lambda data: f"{zlib.crc32(data):08x}",
    "blake2b": lambda data: hashlib.blake2b(data, digest_size=16).hexdigest(),
}
_CHECKSUMS = "crc32"  # what new entries carry


def remove(entry: Path) -> bool:
    """Delete ``entry`` if the cache wrote it (renamed away first); whether it was removed."""
    folder = _marked(entry / ENTRY_MARKER)
    if not (folder or _packed_file(entry)):
        return False
    doomed = entry.with_name(f".removing-{entry.name}-{os.getpid()}")
    try:
        os.rename(entry, doomed)
    except OSError:  # another process removed or replaced it
        return False
    if folder:
        shutil.rmtree(doomed, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.unlink(doomed)
    return True


def _packed_file(path: Path) -> bool:
    """Whether ``path`` is a packed entry by where it is: a file (never a link) named as a key
    (``content_key``: 64 hex digits) in the shard of its first two. The cache writes nothing
    else by such a name, and a first line damaged must not keep a damaged entry in place."""
    name = path.name
    return (
        len(name) == 64
        and name.startswith(path.parent.name)
        and set(name) <= _HEX
        and _is(path, stat.S_ISREG)
    )


_HEX = set("0123456789abcdef")


def touch(entry: Path) -> None:
    """Mark ``entry`` used now (a vanished entry is not an error: it was pruned)."""
    with contextlib.suppress(OSError):
        os.utime(entry)


def entries(directory: Path) -> list[Entry]:
    """Every whole entry the cache wrote under ``directory``: files named as keys
    (``_packed_file``) and folders with its marker (staging and removed ones, locks, and
    folders without the marker, left out)."""
    found = []
    for shard in _folders(directory):
        try:
            listed = [child for child in shard.iterdir() if not child.name.startswith(".")]
        except OSError:
            continue
        for entry in listed:
            if not (_marked(entry / ENTRY_MARKER) or _packed_file(entry)):
                continue
            try:
                found.append(Entry(entry, entry.stat().st_mtime, _size(entry)))
            except OSError:  # removed meanwhile
                continue
    return found


def _size(entry: Path) -> int:
    """Bytes of a file entry, or in the files of a folder entry (its marker, a few bytes per
    file, left out); OSError if it is removed meanwhile."""
    if not _is(entry, stat.S_ISDIR):
        return os.stat(entry).st_size
    return sum(os.stat(path).st_size for _, path in _entry_files(entry))


def usage(directory: Path) -> Usage:
    found = entries(directory)
    used = [entry.used for entry in found]
    return Usage(
        Path(directory),
        len(found),
        sum(entry.size for entry in found),
        min(used, default=None),
        max(used, default=None),
    )


def prune(directory: Path, cap: int, *, recent_s: float = RECENT_S) -> list[Entry]:
    """Remove least recently used entries until ``directory`` holds at most ``cap`` bytes
    (entries used in the last ``recent_s`` seconds stay); the removed entries. A refused
    root (``refusal``) raises CacheFolderError."""
    problem = refusal(directory)
    if problem is not None:
        raise CacheFolderError(problem)
    found = sorted(entries(directory), key=lambda entry: entry.used)
    total = sum(entry.size for entry in found)
    keep_after = time.time() - recent_s
    removed = []
    for entry in found:
        if total <= cap or entry.used > keep_after:
            break
        if not remove(entry.path):
            continue
        total -= entry.size
        removed.append(entry)
    return removed


def _folders(directory: Path) -> list[Path]:
    """Sub-folders, never through a symbolic link, leaving out dot-names (staging, removal)."""
    try:
        children = list(Path(directory).iterdir())
    except OSError:
        return []
    return [
        child for child in children if _is(child, stat.S_ISDIR) and not child.name.startswith(".")
    ]


def _is(path: Path, kind: Callable[[int], bool]) -> bool:
    """Whether ``path`` itself, never a link's target, is of ``kind`` (``stat.S_ISDIR``...)."""
    try:
        return kind(path.lstat().st_mode)
    except OSError:
        return False


def _marked(marker: Path) -> bool:
    return _is(marker, stat.S_ISREG)
