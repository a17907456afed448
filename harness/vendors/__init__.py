"""The vendor packages, one per NPU vendor, each filling the stages in through a ``Vendor``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness.boards.inventory import Runtimes
from harness.diskcache import CacheFolder
from harness.models import OPERATOR_SPECS
from harness.names import suggestion
from harness.pipeline import Vendor, regenerate_arrays
from harness.results.records import CaseRecord
from harness.vendors.rknn.vendor import VENDOR as RKNN

if TYPE_CHECKING:
    from harness.terminal import Registrar

VENDORS: tuple[Vendor, ...] = (RKNN,)
ALL_PLATFORMS = "all"  # --platform all: every platform of the vendor
DEFAULT_PLATFORM = VENDORS[0].default_platform  # without --platform
# The default vendor's caches: the folders --hil-cache and --hil-conversion-cache default to
# (each vendor keys its entries by its own toolkit)
SIMULATOR_CACHE = VENDORS[0].simulator_cache
CONVERSION_CACHE = VENDORS[0].conversion_cache


def vendor_for(platform: str) -> Vendor:
    """The vendor whose toolkit targets ``platform`` (in any case); ``all`` means the first
    vendor's."""
    wanted = platform_named(platform, allow_all=True)
    return next(v for v in VENDORS if wanted == ALL_PLATFORMS or wanted in v.platforms)


def platform_named(name: str, *, allow_all: bool = False) -> str:
    """The platform ``name`` means, spelt as the vendor spells it: in any case (``RK3588`` is
    rk3588), ``all`` only where the caller takes every platform. A LookupError says what is
    known and the closest name."""
    known = sorted(p for vendor in VENDORS for p in vendor.platforms)
    wanted = name.strip().lower()
    if wanted == ALL_PLATFORMS:
        if allow_all:
            return ALL_PLATFORMS
        raise LookupError(f"'{name}' is not a platform here: give one of {', '.join(known)}")
    for platform in known:
        if platform.lower() == wanted:
            return platform
    every = ", or all (every one)" if allow_all else ""
    raise LookupError(
        f"unknown platform {name!r}; known: {', '.join(known)}{every}{suggestion(name, known)}"
    )


def regenerate(record: CaseRecord, folder: Path) -> None:
    """The arrays ``record``'s case folder did not keep, drawn again into ``folder`` with its
    vendor's recipe (``harness.report.bundle.Regenerate``)."""
    try:
        vendor = vendor_for(record.platform)
    except LookupError as exc:
        raise ValueError(str(exc)) from None
    regenerate_arrays(record, folder, vendor.recipe, {**OPERATOR_SPECS, **vendor.models})


def layer_aliases() -> dict[str, str]:
    """Every vendor's layer renames: compiled layer type -> the type it stands for."""
    return {name: kind for vendor in VENDORS for name, kind in vendor.layer_aliases.items()}


def all_runtimes() -> Runtimes:
    """Every vendor's board runtimes by name: what a board file may name."""
    return {name: kind for vendor in VENDORS for name, kind in vendor.runtimes.items()}


def vendor_caches() -> tuple[CacheFolder, ...]:
    """Every vendor's cache folders, each once (``hil cache``): conversions, then results."""
    found: dict[str, CacheFolder] = {}
    for vendor in VENDORS:
        for cache in (vendor.conversion_cache, vendor.simulator_cache):
            found.setdefault(cache.key, cache)
    return tuple(found.values())


def vendor_commands(group: str) -> list[Registrar]:
    """Every vendor's subcommands of a ``hil`` command group: "hil", "boards" or "layout"."""
    return [register for vendor in VENDORS for register in vendor.commands.get(group, ())]
