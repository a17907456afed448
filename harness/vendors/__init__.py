"""The vendors, each a package filling the stages in through a ``Vendor`` (``base``).

A vendor is found through the ``npu_hil.vendors`` entry-point group (the way pytest finds the
package's own ``pytest11`` plugin), so it can live in another distribution: the entry point
names its ``Vendor`` record. One that cannot be loaded (a package it needs is not installed)
is listed with the reason (``unavailable``) and its platforms are unknown.

A run has one vendor, resolved once (``run_vendor``): the one named by ``--vendor`` or the
``HIL_VENDOR`` variable, else the one the project pins (``[tool.npu-hil] vendor`` in the first
pyproject.toml found from the run's folder upwards), else the one installed vendor that can run
cases. Two or more that can, none named or pinned, is an error listing them: installing a
vendor never changes which one an existing run uses. The run's ``--platform`` is looked up
within its vendor (``run_platform``), and the run's defaults (platform, cache folders, what
``--platform all`` means) are that vendor's.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from harness.names import suggestion

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the package's dependencies add tomli on 3.10
    import tomli as tomllib

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
VENDOR_ENV = "HIL_VENDOR"  # the run's vendor where --vendor is not given
PIN_FILE = "pyproject.toml"  # the project file whose [tool.npu-hil] vendor pins the vendor
PIN_TABLE = "npu-hil"  # [tool.npu-hil]


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
    # by name: the order says nothing of which vendor a run uses (run_vendor does)
    return tuple(sorted(found.values(), key=lambda v: v.name)), tuple(missing)


def vendors() -> tuple[Vendor, ...]:
    """Every registered vendor this host could load, by name."""
    return _registry()[0]


def unavailable() -> tuple[Unavailable, ...]:
    """The registered vendors this host cannot load, with the reason."""
    return _registry()[1]


def vendor_named(name: str) -> Vendor:
    """The installed vendor ``name``; a LookupError names the known ones and the nearest."""
    for vendor in vendors():
        if vendor.name == name:
            return vendor
    known = [v.name for v in vendors()]
    gone = "".join(
        f" (vendor {v.name} is registered but unavailable: {v.reason})"
        for v in unavailable()
        if v.name == name
    )
    raise LookupError(
        f"unknown vendor {name!r}{gone}; known: {', '.join(known)}{suggestion(name, known)}"
    )


def platform_vendors() -> dict[str, str]:
    """Each installed vendor's platforms, lower case, to its name: the vendor of a host-checked
    rule's case, and what the store reads as the vendor of a run or record written before runs
    recorded theirs."""
    return {p.lower(): vendor.name for vendor in vendors() for p in vendor.platforms}


def runnable_vendors() -> tuple[Vendor, ...]:
    """The installed vendors that can run cases (a simulator or a board target)."""
    return tuple(v for v in vendors() if v.simulator is not None or v.board_target is not None)


def pinned_vendor(start: Path) -> tuple[str, Path] | None:
    """The vendor the project pins and the file that pins it: ``[tool.npu-hil] vendor`` in
    the first pyproject.toml found in ``start`` or a folder above it (None: no such file, or
    it pins none). A file that cannot be read, or a pin that is not a name, is a LookupError
    naming the file."""
    for folder in (start.absolute(), *start.absolute().parents):
        path = folder / PIN_FILE
        if not path.is_file():
            continue
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise LookupError(
                f"{path}: cannot be read for [tool.{PIN_TABLE}] vendor: {exc}"
            ) from None
        pin = data.get("tool", {}).get(PIN_TABLE, {}).get("vendor")
        if pin is None:
            return None
        if not isinstance(pin, str) or not pin:
            raise LookupError(f"{path}: [tool.{PIN_TABLE}] vendor is {pin!r}: want a vendor name")
        return pin, path
    return None


def run_vendor(name: str | None = None, start: Path | None = None) -> Vendor:
    """The run's vendor, the one function every command and the plugin ask: ``name``
    (``--vendor``), else ``HIL_VENDOR``, else the project's pin found from ``start`` (the
    working folder by default), else the one installed vendor that can run cases. A
    LookupError says why none is chosen: an unknown name, or several vendors and no choice."""
    return chosen_vendor(name, start)[0]


def chosen_vendor(name: str | None = None, start: Path | None = None) -> tuple[Vendor, str]:
    """``run_vendor``'s vendor and, in words, what chose it (``hil vendors`` says both)."""
    if name:
        return vendor_named(name), "--vendor"
    if os.environ.get(VENDOR_ENV):
        return vendor_named(os.environ[VENDOR_ENV]), f"{VENDOR_ENV}"
    pin = pinned_vendor(start or Path.cwd())
    if pin is not None:
        try:
            return vendor_named(pin[0]), f"pinned by {pin[1]}"
        except LookupError as exc:
            raise LookupError(f"{pin[1]}: [tool.{PIN_TABLE}] vendor: {exc}") from None
    runnable = runnable_vendors()
    if len(runnable) == 1:
        return runnable[0], "the one installed vendor that can run cases"
    how = (
        f"choose one with --vendor NAME (or {VENDOR_ENV}=NAME), or pin it in the project's "
        f'{PIN_FILE}: [tool.{PIN_TABLE}] vendor = "NAME"'
    )
    if not runnable:
        known = ", ".join(v.name for v in vendors())
        raise LookupError(f"no installed vendor can run cases (installed: {known}); {how}")
    names = ", ".join(v.name for v in runnable)
    raise LookupError(f"{len(runnable)} installed vendors can run cases ({names}): {how}")


def vendor_help(start: str) -> str:
    """``--vendor``'s help, the pin searched from ``start`` (pytest's rootdir, a command's
    working folder)."""
    return (
        f"the run's vendor (default: env {VENDOR_ENV}, else the project's pin, [tool.{PIN_TABLE}] "
        f"vendor in the {PIN_FILE} of {start} or a folder above it, else the one installed "
        "vendor that can run cases)"
    )


def run_platform(vendor: Vendor, name: str, *, allow_all: bool = False) -> str:
    """``name`` as a platform of ``vendor``, the run's (in any case; ``all`` where the caller
    takes every platform). A LookupError names the vendor's platforms and the closest, the
    vendor a platform of another belongs to, or both vendors of a name two of them share
    (records name a platform alone, so a shared name would be ambiguous)."""
    wanted = name.strip().lower()
    listed = ", ".join(sorted(vendor.platforms))
    if wanted == ALL_PLATFORMS:
        if allow_all:
            return ALL_PLATFORMS
        raise LookupError(
            f"'{name}' is not a platform here: give one of vendor {vendor.name}'s: {listed}"
        )
    own = {p.lower(): p for p in vendor.platforms}
    owners = [v.name for v in vendors() if wanted in {p.lower() for p in v.platforms}]
    if wanted in own and owners == [vendor.name]:
        return own[wanted]
    if len(owners) > 1:
        raise LookupError(
            f"platform {name!r} is a platform of vendors {' and '.join(owners)}: a platform "
            "name two vendors share is refused (records name the platform alone); uninstall one"
        )
    every = ", or all (every one)" if allow_all else ""
    known = f"known: {listed}{every} (vendor {vendor.name}'s)"
    if owners:
        raise LookupError(
            f"platform {name!r} is vendor {owners[0]}'s, not this run's vendor {vendor.name}'s "
            f"({known}); give --vendor {owners[0]}"
        )
    raise LookupError(
        f"unknown platform {name!r}; {known}{suggestion(name, list(vendor.platforms))}"
    )


def run_platforms(vendor: Vendor, spec: str) -> str:
    """``--platform`` as ``vendor`` spells it: one platform, several (``rk3588,rv1106``) or
    ``all``; a LookupError names the unknown one (``run_platform``)."""
    names = [name.strip() for name in spec.split(",")]
    if len(names) == 1:
        return run_platform(vendor, names[0], allow_all=True)
    return ",".join(run_platform(vendor, name) for name in names)


def fill_run_defaults(option: argparse.Namespace, vendor: Vendor) -> None:
    """The run's options left at None (``--platform``, ``--hil-cache``,
    ``--hil-conversion-cache``) set to its vendor's defaults: its default platform and cache
    folders, "off" for a cache it has none of."""
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


class Recipes:
    """The run's vendor's recipe, as a bundle uses it (``harness.report.bundle.Regenerate``)."""

    def __init__(self, vendor: Vendor) -> None:
        self.vendor = vendor
        self.files = vendor.bundle_files

    def __call__(self, record: CaseRecord, folder: Path) -> None:
        """The arrays ``record``'s case folder did not keep, drawn again into ``folder`` with
        the vendor's recipe."""
        from harness.pipeline import regenerate_arrays

        regenerate_arrays(record, folder, self.vendor.recipe, self.vendor.declarations.specs)

    def how_to_run(self, record: CaseRecord) -> Sequence[str]:
        """The vendor's "How to run" lines for the record's platform (none: it has none)."""
        how = self.vendor.how_to_run
        return how(record.platform) if how is not None else ()


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
