"""The vendors, each a package filling the stages in through a ``Vendor`` (``base``).

A vendor is found through the ``npu_hil.vendors`` entry-point group (the way pytest finds the
package's own ``pytest11`` plugin), so it can live in another distribution: the entry point
names its ``Vendor`` record. One that cannot be loaded (a package it needs is not installed)
is listed with the reason (``unavailable``) and its platforms are unknown.

A run has one vendor: its ``--platform``'s, else the default vendor (``default_vendor``). The
run's defaults (platform, cache folders, what ``--platform all`` means) are that vendor's.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from harness.names import suggestion

# What the functions below use is imported in them: a simulator worker (a module of a
# vendor's package) imports this package too, and needs none of it.
if TYPE_CHECKING:
    from harness.boards.inventory import Runtimes
    from harness.diskcache import CacheFolder
    from harness.results.records import CaseRecord
    from harness.terminal import Registrar
    from harness.vendors.base import Vendor

GROUP = "npu_hil.vendors"  # the entry-point group naming each vendor's record
ALL_PLATFORMS = "all"  # --platform all: every platform of the run's vendor


@dataclass(frozen=True)
class Unavailable:
    """A registered vendor this host cannot load, and why."""

    name: str
    entry_point: str  # "module:attribute", as registered
    reason: str


@functools.cache
def _registry() -> tuple[tuple[Vendor, ...], tuple[Unavailable, ...]]:
    from harness.vendors.base import Vendor

    found: dict[str, Vendor] = {}
    missing: list[Unavailable] = []
    for entry in metadata.entry_points(group=GROUP):
        if entry.name in found:  # the same distribution seen twice on the path
            continue
        try:
            vendor = entry.load()
        except ImportError as exc:  # a package it needs (its toolkit, say) is not installed
            missing.append(Unavailable(entry.name, entry.value, f"cannot be loaded: {exc}"))
            continue
        if not isinstance(vendor, Vendor):
            raise TypeError(f"entry point {GROUP}:{entry.name} = {entry.value} is no Vendor")
        found[entry.name] = vendor
    if not found:
        raise LookupError(
            f"no vendor is registered under the entry-point group {GROUP} (the npu-hil "
            "installation predates it: reinstall it, e.g. pip install -e .)"
        )
    # the vendors that can run cases on this host's simulator first: the default is one
    ordered = sorted(found.values(), key=lambda v: (v.simulator is None, v.name))
    return tuple(ordered), tuple(missing)


def vendors() -> tuple[Vendor, ...]:
    """Every registered vendor this host could load, the default first."""
    return _registry()[0]


def unavailable() -> tuple[Unavailable, ...]:
    """The registered vendors this host cannot load, with the reason."""
    return _registry()[1]


def default_vendor() -> Vendor:
    """The vendor of a run without --platform: the first with a simulator (by name), else
    the first by name."""
    return vendors()[0]


def vendor_named(name: str) -> Vendor:
    for vendor in vendors():
        if vendor.name == name:
            return vendor
    raise LookupError(f"unknown vendor {name!r}; known: {', '.join(v.name for v in vendors())}")


def vendor_for(platform: str) -> Vendor:
    """The vendor whose toolkit targets ``platform`` (in any case); ``all`` means the default
    vendor's."""
    wanted = platform_named(platform, allow_all=True)
    if wanted == ALL_PLATFORMS:
        return default_vendor()
    return next(v for v in vendors() if wanted in v.platforms)


def run_vendor(platforms: str | None) -> Vendor:
    """The vendor of a run's ``--platform`` value (``P[,P...]`` or ``all``; None: not given):
    its first platform's. A LookupError names an unknown platform."""
    if platforms is None:
        return default_vendor()
    return vendor_for(platforms.split(",")[0].strip())


def fill_run_defaults(option: argparse.Namespace) -> None:
    """The run's options left at None (``--platform``, ``--hil-cache``,
    ``--hil-conversion-cache``) set to its vendor's defaults: its default platform and cache
    folders, "off" for a cache it has none of. An unknown platform is left for the caller to
    refuse."""
    try:
        vendor = run_vendor(option.platform)
    except LookupError:
        return
    if option.platform is None:
        option.platform = vendor.default_platform
    for name, cache in (
        ("hil_cache", vendor.simulator_cache),
        ("hil_conversion_cache", vendor.conversion_cache),
    ):
        if getattr(option, name, "") is None:
            setattr(option, name, "off" if cache is None else str(cache.directory()))


def cache_help(kind: str) -> str:
    """Help text for a cache option's default: the run's vendor's ``kind`` cache
    ("simulator_cache" or "conversion_cache")."""
    shown = [
        f"{vendor.name}: {cache.directory()} (env {cache.dir_env}, size cap {cache.cap_env})"
        for vendor in vendors()
        if (cache := getattr(vendor, kind)) is not None
    ]
    return "default: the run's vendor's" + (f" ({'; '.join(shown)})" if shown else "")


def case_dtypes() -> tuple[str, ...]:
    """The data types cases have: the operators', then every vendor's own (``-m`` marks)."""
    from harness.cases.operators import DTYPES

    own = (dtype for vendor in vendors() for dtype in vendor.dtypes)
    return tuple(dict.fromkeys((*DTYPES, *own)))


def suite_owner(suite: str) -> Vendor | None:
    """The vendor shipping the suite named ``suite`` (``pytest.mark.hil_suite``), if any."""
    return next((v for v in vendors() if suite in v.case_sources), None)


def other_vendors_suite(suite: str, vendor: Vendor) -> str | None:
    """Why a suite is left out of ``vendor``'s run: it is another vendor's (None: it is not)."""
    owner = suite_owner(suite)
    if owner is None or owner is vendor:
        return None
    return f"suite {suite!r} is vendor {owner.name}'s; this run's vendor is {vendor.name}"


def vendor_lines() -> list[str]:
    """One line per vendor, loaded or not, for listings and report headers."""
    lines = []
    for vendor in vendors():
        targets = [
            name
            for name, has in (("simulator", vendor.simulator), ("boards", vendor.board_target))
            if has
        ]
        if lacks := vendor.missing():
            status = f"not runnable here: {lacks}"
        elif targets:
            status = f"runs on: {', '.join(targets)}"
        else:
            status = "no simulator, no board target"
        lines.append(f"{vendor.name}: {', '.join(vendor.platforms)} ({status})")
    lines += [f"{gone.name}: unavailable ({gone.reason})" for gone in unavailable()]
    return lines


def not_runnable_header() -> list[str]:
    """A run's header lines for the vendors this host cannot run or load, with the reason."""
    lines = [
        f"npu-hil: vendor {vendor.name} not runnable here: {lacks}"
        for vendor in vendors()
        if (lacks := vendor.missing())
    ]
    return lines + [f"npu-hil: vendor {v.name} unavailable: {v.reason}" for v in unavailable()]


def platform_named(name: str, *, allow_all: bool = False) -> str:
    """The platform ``name`` means, spelt as the vendor spells it: in any case (``RK3588`` is
    rk3588), ``all`` only where the caller takes every platform. A LookupError says what is
    known and the closest name."""
    known = [p for vendor in vendors() for p in sorted(vendor.platforms)]
    # by vendor, the default first: "p1, p2 (vendor); q1 (other vendor)"
    listed = "; ".join(f"{', '.join(sorted(v.platforms))} ({v.name})" for v in vendors())
    wanted = name.strip().lower()
    if wanted == ALL_PLATFORMS:
        if allow_all:
            return ALL_PLATFORMS
        raise LookupError(f"'{name}' is not a platform here: give one of {listed}")
    for platform in known:
        if platform.lower() == wanted:
            return platform
    every = ", or all (every one)" if allow_all else ""
    gone = "".join(f"; vendor {v.name} is unavailable ({v.reason})" for v in unavailable())
    raise LookupError(
        f"unknown platform {name!r}; known: {listed}{every}{suggestion(name, known)}{gone}"
    )


class _Recipes:
    """Each record's vendor recipe, as a bundle uses it (``harness.report.bundle.Regenerate``)."""

    def __call__(self, record: CaseRecord, folder: Path) -> None:
        """The arrays ``record``'s case folder did not keep, drawn again into ``folder`` with
        its vendor's recipe."""
        from harness.pipeline import regenerate_arrays

        try:
            vendor = vendor_for(record.platform)
        except LookupError as exc:
            raise ValueError(str(exc)) from None
        regenerate_arrays(record, folder, vendor.recipe, vendor.declarations.specs)

    def how_to_run(self, record: CaseRecord) -> Sequence[str]:
        """The vendor's "How to run" lines for the record's platform (none: unknown)."""
        try:
            vendor = vendor_for(record.platform)
        except LookupError:
            return ()
        return vendor.how_to_run(record.platform) if vendor.how_to_run is not None else ()


regenerate = _Recipes()


def layer_aliases() -> dict[str, str]:
    """Every vendor's layer renames: compiled layer type -> the type it stands for."""
    return {name: kind for vendor in vendors() for name, kind in vendor.layer_aliases.items()}


def all_runtimes() -> Runtimes:
    """Every vendor's board runtimes by name: what a board file may name."""
    return {name: kind for vendor in vendors() for name, kind in vendor.runtimes.items()}


def vendor_caches() -> tuple[CacheFolder, ...]:
    """Every vendor's cache folders, each once (``hil cache``): conversions, then results."""
    found: dict[str, CacheFolder] = {}
    for vendor in vendors():
        for cache in (vendor.conversion_cache, vendor.simulator_cache):
            if cache is not None:
                found.setdefault(cache.key, cache)
    return tuple(found.values())


def vendor_commands(group: str) -> list[Registrar]:
    """Every vendor's subcommands of a ``hil`` command group: "hil", "boards" or "layout"."""
    return [register for vendor in vendors() for register in vendor.commands.get(group, ())]
