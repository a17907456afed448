"""``hil cache info`` and ``hil cache prune``: the shared on-disk caches and their size caps.

Five caches live under ``~/.cache/npu-hil/``: a vendor's conversion cache (models converted
for its boards, in a folder of the vendor's name, shared by every results directory; env
``HIL_CONVERSION_CACHE``, cap ``HIL_CONVERSION_CACHE_MAX``),
``sim/`` (simulator results; env ``HIL_CACHE``, cap ``HIL_CACHE_MAX``), both keyed by model,
toolkit calls and toolkit version, so entries of several SDKs sit side by side, ``ref/``
(host references; env ``HIL_REFERENCE_CACHE``, cap ``HIL_REFERENCE_CACHE_MAX``), keyed by
model, inputs and the reference libraries' versions, and ``cmp/`` (comparisons of outputs with
the references; env ``HIL_COMPARISON_CACHE``, cap ``HIL_COMPARISON_CACHE_MAX``), keyed by the
arrays compared, the tolerance and numpy's version, and ``cases/`` (generated case lists; env
``HIL_CASE_CACHE``, cap ``HIL_CASE_CACHE_MAX``), keyed by the catalogue, npu-hil's own files,
the Python, numpy and onnx releases and the size budget. A folder that is not a cache's (a
symbolic link, or content the cache did not mark as its own) is refused with exit status 2
and never pruned (``harness.diskcache``).
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timezone
from pathlib import Path

from harness.cases import case_cache
from harness.diskcache import (
    DEFAULT_CAP,
    RECENT_S,
    CacheFolder,
    Usage,
    cap_from_env,
    parse_size,
    prune,
    refusal,
    usage,
)
from harness.judge import comparison_cache
from harness.models import reference
from harness.terminal import emit
from harness.vendors import vendor_caches

BAD_INPUT = 2
# by their name, the option (--<key>) and the output's first column
CACHES: dict[str, CacheFolder] = {
    c.key: c for c in (*vendor_caches(), reference.CACHE, comparison_cache.CACHE, case_cache.CACHE)
}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``cache info`` and ``cache prune``; each sets ``handler`` (args -> exit code)."""
    cache = subparsers.add_parser(
        "cache", help="the shared conversion, simulator, host reference, comparison and case caches"
    )
    actions = cache.add_subparsers(dest="action", metavar="ACTION", required=True)
    info = actions.add_parser("info", help="where the caches are, their entries and size")
    info.add_argument("--json", action="store_true", help="machine-readable output")
    prune_parser = actions.add_parser(
        "prune", help="remove the least recently used entries until each cache fits its cap"
    )
    cap_envs = " and ".join(c.cap_env for c in CACHES.values())
    prune_parser.add_argument(
        "--max-size",
        type=_size,
        default=None,
        help=f"the cap for every cache, e.g. 500M (default: each its own, {cap_envs}, else "
        f"2G); entries used in the last {RECENT_S / 60:g} minutes stay",
    )
    for parser in (info, prune_parser):
        for name, folder in CACHES.items():
            parser.add_argument(
                f"--{name}",
                type=Path,
                default=folder.directory(),
                help=f"{folder.holds} (default {folder.dir_env}, else "
                f"~/.cache/npu-hil/{folder.folder})",
            )
    info.set_defaults(handler=run_info)
    prune_parser.set_defaults(handler=run_prune)


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _caches(args: argparse.Namespace) -> dict[str, Path]:
    return {name: getattr(args, name) for name in CACHES}


def _caps(args: argparse.Namespace) -> dict[str, int] | None:
    """Each cache's cap (``--max-size``, else its variable, else 2G), or None (and a
    message) when a variable is not a size."""
    if getattr(args, "max_size", None) is not None:
        return {name: int(args.max_size) for name in CACHES}
    try:
        return {name: cap_from_env(c.cap_env, DEFAULT_CAP) for name, c in CACHES.items()}
    except ValueError as exc:
        emit(f"hil cache: {exc}\n", err=True)
        return None


def _refused(args: argparse.Namespace) -> bool:
    """Whether a cache folder is not a cache's (each such one named on stderr)."""
    problems = [p for p in map(refusal, _caches(args).values()) if p is not None]
    for problem in problems:
        emit(f"hil cache: {problem}\n", err=True)
    return bool(problems)


def run_info(args: argparse.Namespace) -> int:
    caps = _caps(args)
    if caps is None or _refused(args):
        return BAD_INPUT
    found = {name: usage(folder) for name, folder in _caches(args).items()}
    if args.json:
        report = {name: _as_json(u, caps[name]) for name, u in found.items()}
        emit(json.dumps(report, indent=2) + "\n")
        return 0
    for name, u in found.items():
        emit(f"{name:12} {u.directory}\n")
        emit(f"{'':12} {u.entries} entries, {_human(u.size)} of {_human(caps[name])}\n")
        if u.oldest is not None and u.newest is not None:
            emit(f"{'':12} used {_when(u.oldest)} .. {_when(u.newest)}\n")
    return 0


def run_prune(args: argparse.Namespace) -> int:
    caps = _caps(args)
    if caps is None or _refused(args):
        return BAD_INPUT
    for name, folder in _caches(args).items():
        removed = prune(folder, caps[name])
        left = usage(folder)
        freed = sum(entry.size for entry in removed)
        emit(
            f"{name:12} removed {len(removed)} entries ({_human(freed)}); "
            f"{left.entries} left, {_human(left.size)} of {_human(caps[name])}\n"
        )
    return 0


def _as_json(u: Usage, cap: int) -> dict[str, object]:
    return {
        "directory": str(u.directory),
        "entries": u.entries,
        "bytes": u.size,
        "cap_bytes": cap,
        "oldest_use": None if u.oldest is None else _when(u.oldest),
        "newest_use": None if u.newest is None else _when(u.newest),
    }


def _human(size: float) -> str:
    if size < 1024:
        return f"{size:.0f} B"
    units = ("KiB", "MiB", "GiB")
    index = 0
    size /= 1024
    while size >= 1024 and index < len(units) - 1:
        size /= 1024
        index += 1
    return f"{size:.1f} {units[index]}"


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat(timespec="seconds")
