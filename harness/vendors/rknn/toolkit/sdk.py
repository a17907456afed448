"""rknn-toolkit2 environments: one virtual environment per toolkit release, from recipes kept as
data (``data/sdk-recipes.yaml``).

``hil sdk install VERSION`` builds ``<sdk dir>/VERSION`` (default ``~/.cache/npu-hil/sdk``, env
``HIL_SDK_DIR``): a venv with the toolkit (``--no-deps``), the recipe's packages and what the
simulator worker and converter import besides, then a ``sdk.json`` of the versions really
installed. ``--sdk VERSION`` runs the simulator workers and the converter under that venv's
interpreter; the toolkit of the running interpreter needs no venv.

Installs of one version take a lock (``.VERSION.lock``), so two at once into one folder do not
undo each other: the second waits, then finds the first's result. Only folders named by a
version whose ``sdk.json`` says that version are SDKs; others (``2.3.2 copy``) are ignored, and
said so on stderr.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from harness.text import clipped, printable
from harness.vendors.rknn.toolkit.calls import KEY_PACKAGES, key_versions, toolkit_version

RECIPES = "sdk-recipes.yaml"
MANIFEST = "sdk.json"
SDK_DIR_ENV = "HIL_SDK_DIR"
ALL = "all"  # --sdk all: every installed toolkit plus the running one
_VERSION = re.compile(r"\d+(\.\d+)+([.+-]?[A-Za-z0-9]+)*")  # an SDK folder's name: 2.3.2
# The versions ``hil sdk list`` shows and sdk.json records.
_VERSIONS_SCRIPT = (
    "import importlib.metadata as m, json, sys\n"
    "def v(p):\n"
    "    try: return m.version(p)\n"
    "    except m.PackageNotFoundError: return None\n"
    "print(json.dumps({'python': sys.version.split()[0], "
    "'packages': {p: v(p) for p in sys.argv[1:]}}))\n"
)


class SdkError(Exception):
    """A recipe file, an SDK directory or an install is not usable; the message says why."""


@dataclass(frozen=True)
class Recipe:
    """How one toolkit release is installed: the toolkit requirement (installed ``--no-deps``)
    and the packages that make it import, build and simulate."""

    version: str
    toolkit: str
    packages: tuple[str, ...]
    note: str = ""


@dataclass(frozen=True)
class Recipes:
    default: str
    python: str
    harness: tuple[str, ...]  # what npu-hil's worker and converter import beside the toolkit
    by_version: dict[str, Recipe]

    def get(self, version: str) -> Recipe:
        try:
            return self.by_version[version]
        except KeyError:
            known = ", ".join(self.by_version)
            raise SdkError(
                f"rknn-toolkit2 {clipped(version)!r} has no install recipe (known: {known}); "
                f"add one to harness/vendors/rknn/data/{RECIPES}"
            ) from None


def _strings(value: Any, where: str, source: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise SdkError(f"{source}: {where} must be a non-empty list of requirements, got {value!r}")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise SdkError(f"{source}: {where}[{i}] must be a requirement string, got {item!r}")
    return tuple(value)


def _string(mapping: dict[str, Any], key: str, where: str, source: str) -> str:
    value = mapping.get(key)
    if not isinstance(value, str) or not value:
        raise SdkError(f"{source}: {where}{key} must be a non-empty string, got {value!r}")
    return value


def parse_recipes(text: str, source: str) -> Recipes:
    """Validate a recipe file's text; errors name ``source``, the field and the value."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise SdkError(f"{source}: not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise SdkError(f"{source}: must be a mapping, got {type(data).__name__}")
    unknown = set(data) - {"default", "python", "harness", "recipes"}
    if unknown:
        raise SdkError(f"{source}: unknown top-level key(s) {', '.join(sorted(map(str, unknown)))}")
    entries = data.get("recipes")
    if not isinstance(entries, dict) or not entries:
        raise SdkError(f"{source}: recipes must be a mapping of version to recipe, got {entries!r}")
    by_version: dict[str, Recipe] = {}
    for version, entry in entries.items():
        where = f"recipes.{version}"
        if not isinstance(version, str):
            raise SdkError(f"{source}: recipe key {version!r} must be a quoted version string")
        if not isinstance(entry, dict):
            raise SdkError(f"{source}: {where} must be a mapping, got {entry!r}")
        extra = set(entry) - {"toolkit", "packages", "note"}
        if extra:
            raise SdkError(
                f"{source}: {where}: unknown key(s) {', '.join(sorted(map(str, extra)))}"
            )
        toolkit = _string(entry, "toolkit", f"{where}.", source)
        if toolkit != f"rknn-toolkit2=={version}":
            raise SdkError(
                f"{source}: {where}.toolkit must be 'rknn-toolkit2=={version}', got {toolkit!r}"
            )
        note = entry.get("note", "")
        if not isinstance(note, str):
            raise SdkError(f"{source}: {where}.note must be a string, got {note!r}")
        packages = _strings(entry.get("packages"), f"{where}.packages", source)
        by_version[version] = Recipe(version, toolkit, packages, note)
    default = _string(data, "default", "", source)
    if default not in by_version:
        raise SdkError(f"{source}: default {default!r} has no recipe")
    return Recipes(
        default=default,
        python=_string(data, "python", "", source),
        harness=_strings(data.get("harness"), "harness", source),
        by_version=by_version,
    )


def load_recipes() -> Recipes:
    path = resources.files("harness.vendors.rknn").joinpath("data", RECIPES)
    return parse_recipes(path.read_text(), f"harness/vendors/rknn/data/{RECIPES}")


def sdk_dir(root: Path | None = None) -> Path:
    """The SDK folder: ``root``, else ``HIL_SDK_DIR``, else ``~/.cache/npu-hil/sdk``; SdkError
    when it exists and is not a folder."""
    root = root or Path(os.environ.get(SDK_DIR_ENV) or Path.home() / ".cache" / "npu-hil" / "sdk")
    if root.exists() and not root.is_dir():
        raise SdkError(f"{root}: the SDK folder (env {SDK_DIR_ENV}) is not a folder")
    return root


@dataclass(frozen=True)
class Sdk:
    """A toolkit release ready to run: its interpreter and the versions installed beside it."""

    version: str
    python: str
    packages: dict[str, str | None]
    where: str  # the venv folder, or "this environment"


def _probe_versions(python: str) -> dict[str, Any]:
    done = subprocess.run(
        [python, "-c", _VERSIONS_SCRIPT, *KEY_PACKAGES], capture_output=True, text=True, timeout=60
    )
    if done.returncode != 0:
        raise SdkError(f"{python} does not start: {done.stderr.strip()[-500:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def current() -> Sdk | None:
    """The toolkit of the running interpreter (the main tox environment's), if any."""
    here = _this_environment()
    return None if here.version == "not installed" else here


def _this_environment() -> Sdk:
    """The running interpreter and its packages, with or without a toolkit."""
    packages = key_versions()  # no subprocess: ~75 ms
    return Sdk(toolkit_version(), sys.executable, packages, "this environment")


def installed(root: Path | None = None) -> list[Sdk]:
    """The venvs under the SDK directory with a manifest (finished installs), by version;
    a folder not named by a version, or whose manifest names another, is ignored (on stderr)."""
    root = sdk_dir(root)
    found = []
    for manifest in sorted(root.glob(f"*/{MANIFEST}")):
        folder = manifest.parent
        if not _VERSION.fullmatch(folder.name):
            _ignored(f"{folder}: its name is not a toolkit version")
            continue
        try:
            data = json.loads(manifest.read_text())
            packages = data["packages"]
            version = data.get("version", folder.name)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            raise SdkError(f"{manifest}: damaged SDK manifest ({error}); reinstall") from None
        if version != folder.name:
            _ignored(f"{folder}: its {MANIFEST} is of rknn-toolkit2 {clipped(str(version))!r}")
            continue
        found.append(Sdk(folder.name, str(folder / "bin" / "python"), packages, str(folder)))
    return sorted(found, key=lambda sdk: _version_key(sdk.version))


@cache
def _ignored(why: str) -> None:
    """Say once per process that an SDK folder is not used, and why."""
    print(printable(f"npu-hil: ignoring SDK folder {why}"), file=sys.stderr)  # a folder name


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else -1 for part in version.split("."))


def available(root: Path | None = None) -> dict[str, Sdk]:
    """Every toolkit a run can use: the installed venvs, and the running interpreter's own."""
    sdks = {sdk.version: sdk for sdk in installed(root)}
    here = current()
    if here is not None:
        sdks[here.version] = here  # the running interpreter wins over a venv of the same version
    return dict(sorted(sdks.items(), key=lambda item: _version_key(item[0])))


def resolve(spec: str, root: Path | None = None) -> list[Sdk]:
    """``--sdk`` value (``2.3.2,2.5.0`` or ``all``) -> the SDKs, oldest first."""
    sdks = available(root)
    if spec.strip() == ALL:
        if not sdks:
            raise SdkError("--sdk all: no rknn-toolkit2 installed (hil sdk install VERSION)")
        return list(sdks.values())
    wanted = [part.strip() for part in spec.split(",")]
    if not all(wanted):
        raise SdkError(f"--sdk {clipped(spec)!r}: empty version in the list")
    missing = [v for v in wanted if v not in sdks]
    if missing:
        have = ", ".join(sdks) or "none"
        absent = ", ".join(map(clipped, missing))
        raise SdkError(
            f"--sdk {clipped(spec)!r}: rknn-toolkit2 {absent} not installed (installed: {have}); "
            f"run: hil sdk install {clipped(missing[0])}"
        )
    return [sdks[v] for v in sorted(set(wanted), key=_version_key)]


def interpreter(sdk: str | None) -> Sdk:
    """The environment that runs ``sdk``; None: this interpreter and its toolkit."""
    here = _this_environment()  # without a toolkit: a run without the simulator, converting nothing
    if sdk is None or sdk == here.version:
        return here
    (found,) = resolve(sdk)
    return found


def install(
    version: str,
    root: Path | None = None,
    say: Callable[[str], None] = print,
    recipes: Recipes | None = None,
) -> Sdk:
    """Build the venv for ``version`` from its recipe (default: the shipped recipes); an
    existing finished one is kept.

    The venv is built in ``VERSION.partial`` and renamed when the toolkit imports, so a failed
    or interrupted install never looks installed; a failed one is removed. The whole install
    holds the version's lock: a second install of it waits, then finds it installed.
    """
    recipes = recipes or load_recipes()
    recipe = recipes.get(version)
    root = sdk_dir(root)
    folder = root / version
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise SdkError(f"{root}: cannot create the SDK folder: {error.strerror}") from None
    with _install_lock(root, version, say):
        if (folder / MANIFEST).exists():
            say(f"rknn-toolkit2 {version} is already installed in {folder}")
            return next(sdk for sdk in installed(root) if sdk.version == version)
        partial = root / f"{version}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)
        say(f"creating {folder} (python {recipes.python})")
        try:
            _build(partial, recipe, recipes.harness, say)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        partial.rename(folder)
    return next(sdk for sdk in installed(root) if sdk.version == version)


@contextlib.contextmanager
def _install_lock(root: Path, version: str, say: Callable[[str], None]) -> Iterator[None]:
    """Hold ``root/.VERSION.lock``; waits (saying so) while another install holds it."""
    with (root / f".{version}.lock").open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for another install of rknn-toolkit2 {version} into {root}")
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield  # the lock goes with the file's closing


def _build(
    partial: Path, recipe: Recipe, harness: tuple[str, ...], say: Callable[[str], None]
) -> None:
    version = recipe.version
    _run([sys.executable, "-m", "venv", str(partial)], "creating the virtual environment")
    python = str(partial / "bin" / "python")
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "--quiet"]
    say(f"installing {recipe.toolkit} (--no-deps)")
    _run([*pip, "--no-deps", recipe.toolkit], f"installing {recipe.toolkit}")
    say(f"installing {' '.join(recipe.packages + harness)}")
    _run([*pip, *recipe.packages, *harness], f"installing the packages of {version}")
    say("checking that the toolkit imports")
    _run([python, "-c", "from rknn.api import RKNN"], f"importing rknn-toolkit2 {version}")
    info = _probe_versions(python)
    if info["packages"].get("rknn-toolkit2") != version:
        raise SdkError(
            f"installed rknn-toolkit2 is {info['packages'].get('rknn-toolkit2')}, not {version}"
        )
    (partial / MANIFEST).write_text(
        json.dumps({"version": version, "recipe": recipe.toolkit, **info}, indent=2) + "\n"
    )


def _run(command: list[str], doing: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        output = (done.stderr or done.stdout).strip()
        hint = ""
        if "No matching distribution" in output or "Could not find a version" in output:
            hint = " (not on the package index)"
        raise SdkError(f"{doing} failed{hint}:\n{output[-2000:]}")
