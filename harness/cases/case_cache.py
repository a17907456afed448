"""Generated case lists kept on disk, so a run does not generate its cases again.

Generating a platform's cases builds a model for every value a limit proposes, to see that
ONNX takes it (``operators.variant.refusal``): one to three seconds a platform, more than a whole
run whose results are all cached takes for its cases. What comes out depends only on the
catalogue, npu-hil's own code and data, the Python, numpy and onnx releases (onnx's checker
refuses models) and the size budget, which together key an entry: any change to npu-hil's
files, an editable install's included, keys a fresh one.

An entry holds the cases, and the unprobed limits by their place in the catalogue, as JSON
(never pickle: a cache folder is not trusted to run code). A list is stored only when it
reads back equal to what was generated; an entry that cannot be read back whole is a miss,
and the cases are generated again.

An entry decides which cases a run has, so it is trusted only as this user's own: the cache
folder must be the user's and writable by no one else (made with mode 0700; another user's,
or one a group or everyone may write, a team's shared cache say, is refused with
CacheFolderError), and every entry carries an HMAC-SHA256 of its key and content under the
user's own key (``KEY_FILE``, 32 random bytes made once, mode 0600, in
``$XDG_STATE_HOME/npu-hil``, default ``~/.local/state/npu-hil``, away from the caches so that
a cache folder copied from elsewhere brings no key). An entry that does not verify (rewritten,
written under another key) is a miss, removed and generated again; the CRC of ``diskcache``
only catches accidents.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import hmac
import json
import os
import platform
import secrets
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import onnx

import harness
from harness.cases.case import Case, CaseSet, Control, Expect, Untested
from harness.cases.operators import operator_cases
from harness.diskcache import CacheFolder, CacheFolderError, DamagedEntry, DiskCache, content_key
from harness.documented.operators import OperatorCatalogue
from harness.models import Declarations
from harness.models.budget import size_budget
from harness.private_folders import OTHERS_ANY, UnsafePathError, read_regular, unsafe

CACHE = CacheFolder(
    "cases", "cases", "HIL_CASE_CACHE", "HIL_CASE_CACHE_MAX", "generated case lists"
)
FORMAT = 3  # bump when an entry's layout changes (2: sealed with an HMAC; 3: controls)
KEY_FILE = "case-cache.key"
_KEY_BYTES = 32


class CaseCache(DiskCache):
    """``operator_cases`` kept under ``directory`` (``harness.diskcache``), capped at ``cap``
    bytes (default ``HIL_CASE_CACHE_MAX``, else 2 GiB)."""

    def __init__(self, directory: Path, cap: int | None = None) -> None:
        """A folder that is not a cache's (``diskcache.claim``), or not this user's alone, and
        a key file not the user's alone, raise CacheFolderError (``check``)."""
        self.secret = check(directory)
        super().__init__(directory, CACHE, cap)

    def cases(
        self, catalogue: OperatorCatalogue, models: Declarations, ops: Iterable[str] | None = None
    ) -> CaseSet:
        """``operator_cases(catalogue, models, ops)`` under this run's size budget: stored, or
        generated and stored (unless it would not read back equal)."""
        wanted = None if ops is None else sorted(set(ops))
        key = _key(catalogue, models, wanted)
        stored = self.get_packed(
            key, lambda sealed, arrays: _case_set(self._open(key, sealed), catalogue)
        )
        if stored is not None:
            return stored
        generated = operator_cases(catalogue, models, ops=wanted)
        try:
            data = _stored(generated, catalogue)
        except (TypeError, ValueError):  # a value JSON cannot hold, a limit not in the catalogue
            return generated
        if _case_set(data, catalogue) == generated:  # ``data`` holds JSON's types only
            self.put_packed(key, {"mac": self._mac(key, data), "data": data}, [])
        return generated

    def _mac(self, key: str, data: Any) -> str:
        """HMAC-SHA256 of an entry's key and JSON content under this user's key."""
        content = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hmac.new(self.secret, f"{key}\n{content}".encode(), hashlib.sha256).hexdigest()

    def _open(self, key: str, sealed: Any) -> Any:
        """The content of a stored entry, DamagedEntry (a miss) unless its HMAC verifies."""
        if not isinstance(sealed, dict) or not isinstance(sealed.get("mac"), str):
            raise DamagedEntry(f"case cache entry {key}: no HMAC")
        if not hmac.compare_digest(sealed["mac"], self._mac(key, sealed.get("data"))):
            raise DamagedEntry(f"case cache entry {key}: its HMAC does not verify")
        return sealed["data"]


def check(directory: Path) -> bytes:
    """The user's key for the cache at ``directory``, once its folder is known to be this
    user's alone (made with mode 0700 when missing); CacheFolderError, naming the folder or
    the key file and what is wrong, otherwise."""
    directory = Path(directory)
    if not os.path.lexists(directory):
        directory.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, 0o700)
    why = unsafe(directory)
    if why is not None:
        raise CacheFolderError(
            f"{directory} {why}: the case cache decides which cases a run has, so it is "
            "kept only in a folder of this user's that no one else can write; give another "
            f"(--hil-case-cache, {CACHE.dir_env}) or make it so (chmod go-w)"
        )
    return user_key()


def key_path() -> Path:
    """Where this user's case cache key is: ``$XDG_STATE_HOME/npu-hil/KEY_FILE``."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "npu-hil" / KEY_FILE


def user_key() -> bytes:
    """This user's key (``key_path``), made on first use (random, mode 0600); a key file or
    folder that another user owns or may change or read, a link or a special file, or one
    that holds no key, is refused (CacheFolderError), never replaced: its owner should see."""
    path = key_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    why = unsafe(path.parent)
    if why is not None:
        raise CacheFolderError(f"{path.parent} {why}: it holds the case cache's key")
    if not os.path.lexists(path):
        _make_key(path)
    why = unsafe(path, OTHERS_ANY, stat.S_IFREG)  # a link named as one, never followed
    text = b""
    if why is None:
        try:
            text = read_regular(path, 4 * _KEY_BYTES, OTHERS_ANY)
        except UnsafePathError as exc:  # what was opened: it may have been replaced
            why = str(exc)
    if why is not None:
        raise CacheFolderError(f"{path} {why}: it is the case cache's key (mode 0600)")
    try:
        key = bytes.fromhex(text.decode("ascii").strip())
    except ValueError:
        key = b""
    if len(key) != _KEY_BYTES:
        raise CacheFolderError(
            f"{path}: not a case cache key ({_KEY_BYTES} bytes in hex); remove it to make a new one"
        )
    return key


def _make_key(path: Path) -> None:
    """A new random key at ``path``, mode 0600, appearing whole (linked into place: another
    process making one at once wins or loses whole)."""
    handle, staging = tempfile.mkstemp(prefix=f".{KEY_FILE}-", dir=path.parent)
    try:
        with open(handle, "w") as file:
            file.write(secrets.token_hex(_KEY_BYTES) + "\n")
        with contextlib.suppress(FileExistsError):
            os.link(staging, path)
    finally:
        os.unlink(staging)


def _key(catalogue: OperatorCatalogue, models: Declarations, ops: list[str] | None) -> str:
    budget = size_budget()
    header = {
        "format": FORMAT,
        "npu_hil": package_digest(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "onnx": onnx.__version__,
        "budget": [budget.elements, budget.bytes],
        "models": sorted(models.specs),
        "ops": ops,
    }
    described = json.dumps(dataclasses.asdict(catalogue), sort_keys=True, default=repr)
    return content_key(header, described.encode(), [])


PACKAGE = Path(harness.__file__).parent


@functools.cache
def package_digest(root: Path = PACKAGE) -> str:
    """sha256 (hex) of every file under ``root`` (the installed ``harness`` package: its code
    and its data, the vendors' documents among them) by path and bytes, bytecode left out."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            name = path.relative_to(root).as_posix().encode()
            data = path.read_bytes()
            for chunk in (name, data):
                digest.update(len(chunk).to_bytes(8, "little"))
                digest.update(chunk)
    return digest.hexdigest()


def _stored(found: CaseSet, catalogue: OperatorCatalogue) -> dict[str, Any]:
    # an unprobed limit by its operator and place in the operator's limits: an id may name
    # two limits (one an operator states, one it adopts from the entry it fuses onto)
    unprobed = []
    for untested in found.unprobed:
        limit = untested.limit
        op = catalogue.operators.get(limit.op)
        held = op.limits() if op is not None else []
        if limit not in held:
            raise ValueError(f"unprobed limit {limit.id} is none of {limit.op}'s in the catalogue")
        unprobed.append([limit.op, held.index(limit), limit.id, untested.reason])
    cases = [_plain(dataclasses.asdict(case)) for case in found.cases]
    return {"cases": cases, "unprobed": unprobed}


def _case_set(data: dict[str, Any], catalogue: OperatorCatalogue) -> CaseSet:
    """The cases and unprobed limits ``_stored`` wrote; an error (a miss) for a limit the
    catalogue no longer holds where it did."""
    unprobed = []
    for name, index, limit_id, reason in data["unprobed"]:
        limit = catalogue.operators[name].limits()[index]
        if limit.id != limit_id:
            raise KeyError(f"{name}: limit {index} is {limit.id}, not {limit_id}")
        unprobed.append(Untested(limit, reason))
    return CaseSet([_case(_restored(fields)) for fields in data["cases"]], unprobed)


def _case(fields: dict[str, Any]) -> Case:
    control = fields.get("control")
    return Case(
        **{
            **fields,
            "expects": tuple(Expect(**expect) for expect in fields["expects"]),
            "control": Control(**control) if control is not None else None,
        }
    )


# JSON has lists only: a tuple is stored as {"tuple": [...]}, and so that no dict of a case
# reads as one, every dict as {"dict": {...}}.
def _plain(value: Any) -> Any:
    """``value`` as JSON holds it, tuples marked; TypeError for what JSON cannot hold."""
    if isinstance(value, tuple):
        return {"tuple": [_plain(item) for item in value]}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {"dict": {key: _plain(item) for key, item in value.items()}}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"a stored case cannot hold {type(value).__name__} {value!r}")


def _restored(value: Any) -> Any:
    """What ``_plain`` stored, tuples and dicts as they were."""
    if isinstance(value, list):
        return [_restored(item) for item in value]
    if isinstance(value, dict):
        [(kind, held)] = value.items()
        if kind == "tuple":
            return tuple(_restored(item) for item in held)
        return {key: _restored(item) for key, item in held.items()}
    return value
