"""Repro bundles: one failing case as a folder (and .tar.gz) a vendor can run without npu-hil.

A run leaves one bundle per failing cause (``make_bundles_for_failures``): one case shows a
vendor the problem; ``hil repro`` bundles any other case from its folder.
``RESULTS/bundles/<slug>/`` holds the case's artifacts (model.onnx, inputs/, reference/,
reference-ort/, observed/ or observed-summary.json, and the files the vendor's recipe writes:
``RecipeFiles``, declared on the vendor's record: its settings, calibration data, build log,
reproduce script), ``case.json`` (the record) and ``README.md`` (the
documented expectation, what was seen and how to rerun the case). A case folder keeps only what
cannot be drawn again; the bundle gets the rest (inputs, references, calibration data) from a
``Regenerate`` (``harness.pipeline.regenerate_arrays`` with the vendor's recipe), so it is
complete whatever the folder kept. A vendor without a reproduce script still gets a bundle;
its README says how to rerun the model without one.

Scrubbing, because bundles leave the building: every text file except the vendor's reproduce
script (npu-hil's own fixed text) is rewritten so that the results directory's absolute path,
the home directory and the host name do not appear (paths inside the case folder become
relative, the others placeholders), the run's secrets are redacted (``harness.text.redact``),
and JSON keys that look like secrets are dropped. Binary files (.npy, .onnx) are copied as they
are. Tar members carry no user or group names.

Only what really lives in the case folder leaves it: regular files and real folders. A symbolic
link (to a file or a folder, inside or outside) or a special file is never followed; it is left
out and named under "Left out" in README.md. A case folder that resolves outside the results
directory, or a required file (model.onnx and the vendor's ``RecipeFiles.required``) that is
missing or a link, is refused with ``BundleError``.

Publication is atomic and serialized: a bundle is built in a private staging folder and packed
beside it, then both are renamed into place, all under a flock on ``bundles/`` itself, so two
``hil repro`` take turns and neither publishes a partial bundle.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import fcntl
import json
import os
import re
import shutil
import socket
import stat
import tarfile
import tempfile
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from harness.judge.verdict import FAILING_VERDICTS
from harness.report.causes import causes
from harness.report.layer_sections import accuracy_section, document_section
from harness.report.markdown import md_escape
from harness.report.matrix import case_facts
from harness.results.journal import JOURNAL_NAME, read_records
from harness.results.layer_tables import LAYER_TABLES
from harness.results.records import BOARD_LOG, CaseRecord, case_slug, record_key
from harness.text import SECRET_NAME, redact

BUNDLES_DIR = "bundles"
MODEL = "model.onnx"
# observed-summary.json: a case folder's observed outputs over its cap, summarised
COPIED = (
    MODEL,
    "observed-summary.json",
    BOARD_LOG,
    *LAYER_TABLES,  # a user's model: its layers against the document and the reference
)
COPIED_DIRS = ("inputs", "observed")
# reference/ and each host reference's own folder (``HostReference.folder``: reference-ort/):
# whatever the registry named them, a case folder's references are its reference* folders
REFERENCE_DIRS = "reference*"
BINARY_SUFFIXES = (".npy", ".onnx")


@dataclass(frozen=True)
class RecipeFiles:
    """What a vendor's job recipe writes into a case folder, as a bundle takes it (the
    vendor's record declares it; the default: nothing beyond the model)."""

    written: tuple[str, ...] = ()  # files and folders a bundle copies when the folder has them
    required: tuple[str, ...] = ()  # of those, the files a bundle cannot do without
    script: str | None = None  # the script that reruns the case without npu-hil, if any
    json_files: tuple[str, ...] = ()  # JSON settings files, their secret-looking keys dropped

    def __post_init__(self) -> None:
        named = {*self.required, *self.json_files, *([self.script] if self.script else [])}
        if stray := sorted(named - set(self.written)):
            raise ValueError(f"RecipeFiles: {', '.join(stray)} not among the files written")


NO_RECIPE_FILES = RecipeFiles()


class Regenerate(Protocol):
    """A record's vendor recipe, as a bundle uses it."""

    files: RecipeFiles  # what the recipe writes into a case folder

    def __call__(self, record: CaseRecord, folder: Path) -> None:
        """Write into a bundle's folder the arrays its case folder did not keep (inputs,
        references, calibration data), drawn again from the record's recipe; raises
        ValueError when it cannot."""

    def how_to_run(self, record: CaseRecord) -> Sequence[str]:
        """The README's "How to run" lines (Markdown): what reproducing the case needs."""


class BundleError(ValueError):
    """A bundle cannot be made; the message names the case and the file or field at fault."""


def bundle_dir(results_dir: str | os.PathLike[str], key: str) -> Path:
    """The bundle folder of a record, by its ``record_key`` (case id and SDK)."""
    return Path(results_dir) / BUNDLES_DIR / case_slug(key)


def tarball_path(folder: Path) -> Path:
    return folder.parent / f"{folder.name}.tar.gz"


def existing_bundles(
    results_dir: str | os.PathLike[str], records: list[CaseRecord]
) -> dict[str, str]:
    """``record_key`` -> bundle folder relative to the results directory, for bundles on disk."""
    return {
        record_key(record): f"{BUNDLES_DIR}/{case_slug(record_key(record))}"
        for record in records
        if (bundle_dir(results_dir, record_key(record)) / "case.json").is_file()
    }


def make_bundle(
    results_dir: str | os.PathLike[str],
    case_id: str,
    sdk: str | None = None,
    regenerate: Regenerate | None = None,
    *,
    files: RecipeFiles | None = None,
) -> Path:
    """Build ``bundles/<slug>/`` and ``bundles/<slug>.tar.gz`` for one case; returns the folder.

    ``sdk`` picks the record when the case ran on several SDKs in this directory;
    ``regenerate`` draws the arrays the case folder did not keep (none: the folder must hold
    them); ``files``, what the vendor's recipe wrote into it (default: ``regenerate``'s, else
    none: only the model is required).
    """
    journal = Path(results_dir) / JOURNAL_NAME
    records = read_records(results_dir)
    matches = [r for r in records if r.id == case_id and sdk in (None, r.sdk)]
    if not matches:
        ids = sorted({record.id for record in records})
        close = difflib.get_close_matches(case_id, ids, n=3)
        hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
        on = f" on SDK {sdk!r}" if sdk is not None else ""
        raise BundleError(f"{journal}: no case with id {case_id!r}{on}{hint}")
    if len(matches) > 1:
        sdks = ", ".join(record.sdk for record in matches)
        raise BundleError(f"{journal}: case {case_id!r} ran on SDKs {sdks}; choose one with --sdk")
    return _make_bundle(Path(results_dir), matches[0], regenerate, files)


def make_bundles_for_failures(
    results_dir: str | os.PathLike[str],
    aliases: Mapping[str, str] | None = None,
    regenerate: Regenerate | None = None,
    *,
    files: RecipeFiles | None = None,
) -> list[Path]:
    """One bundle per failing cause (``harness.report.causes``; ``aliases``: the vendors'
    layer renames): its example, a case already bundled if there is one, else the first case
    not a known issue. The cause's other cases keep their case folders, for ``hil repro``. A
    case that cannot be bundled is reported as a warning and the cause's next case is tried;
    none when nothing ran."""
    records = [
        record
        for record in read_records(results_dir, allow_empty=True)
        if record.verdict in FAILING_VERDICTS
    ]
    made = []
    for cause in causes(records, aliases, existing_bundles(results_dir, records)):
        for record in cause.records:
            try:
                made.append(_make_bundle(Path(results_dir), record, regenerate, files))
                break
            except (BundleError, OSError) as exc:
                warnings.warn(f"no repro bundle for {record.id!r}: {exc}", stacklevel=2)
    return made


def _make_bundle(
    results_dir: Path,
    record: CaseRecord,
    regenerate: Regenerate | None,
    files: RecipeFiles | None,
) -> Path:
    """Fill and scrub a private staging folder, pack it, then publish folder and tarball by
    renaming, under a lock: concurrent makers of one bundle take turns and a reader sees a
    whole bundle (the old one or the new one)."""
    if files is None:
        files = regenerate.files if regenerate is not None else NO_RECIPE_FILES
    case_dir = _case_dir(results_dir, record, regenerate is not None, files)
    target = bundle_dir(results_dir, record_key(record))
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target.parent):
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        packed = staging.with_name(f"{staging.name}.tar.gz")
        retired = staging.with_name(f"{staging.name}.old")
        try:
            _fill(staging, case_dir, record, regenerate, files)
            _scrub_folder(staging, _replacements(results_dir, case_dir), files.script)
            _write_tarball(staging, packed, target.name)
            if target.exists():
                target.rename(retired)
            staging.rename(target)
            os.replace(packed, tarball_path(target))
        finally:
            for leftover in (staging, retired):
                shutil.rmtree(leftover, ignore_errors=True)
            packed.unlink(missing_ok=True)
    return target


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """The bundles folder itself is the lock: no lock file is left among the bundles."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _case_dir(results_dir: Path, record: CaseRecord, drawn: bool, files: RecipeFiles) -> Path:
    """The case folder, refused when it lacks a required file (the model, the recipe's
    ``files.required``), or arrays that cannot be ``drawn`` again."""
    case = case_dir(results_dir, record)
    missing = [name for name in (MODEL, *files.required) if not _regular(case / name)]
    if missing:
        where = f"{results_dir / JOURNAL_NAME}: case {record.id!r}: field 'artifacts'"
        raise BundleError(
            f"{where}: {case} lacks {', '.join(missing)} (as regular files, not links)"
        )
    if not drawn and not (case / "inputs").is_dir():
        raise BundleError(
            f"{case}: no inputs: the folder keeps what cannot be drawn again, and nothing "
            "here draws them (hil repro does)"
        )
    return case


def case_dir(results_dir: Path, record: CaseRecord) -> Path:
    """The record's case folder, refused (BundleError) unless it lies inside ``results_dir``
    after links."""
    where = f"{results_dir / JOURNAL_NAME}: case {record.id!r}: field 'artifacts'"
    relative = Path(record.artifacts)
    if (
        not record.artifacts
        or "\0" in record.artifacts  # no file system takes it
        or relative.is_absolute()
        or ".." in relative.parts
    ):
        raise BundleError(
            f"{where} is {record.artifacts!r}: want a folder inside the results directory"
        )
    folder = results_dir / relative
    if not folder.resolve().is_relative_to(results_dir.resolve()):
        raise BundleError(
            f"{where}: {folder} links to {folder.resolve()}, outside the results directory"
        )
    return folder


def _regular(path: Path) -> bool:
    """A regular file itself, not a link to one."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def _fill(
    folder: Path,
    case_dir: Path,
    record: CaseRecord,
    regenerate: Regenerate | None,
    files: RecipeFiles,
) -> None:
    left_out: list[str] = []
    references = sorted(path.name for path in case_dir.glob(REFERENCE_DIRS))
    for name in (*COPIED, *files.written, *COPIED_DIRS, *references):
        if os.path.lexists(case_dir / name):
            _copy(case_dir / name, folder / name, name, left_out)
    if regenerate is not None:
        try:
            regenerate(record, folder)
        except (ValueError, OSError) as exc:
            raise BundleError(f"{case_dir}: cannot draw its arrays again: {exc}") from None
    for name in files.json_files:
        if not (folder / name).is_file():
            continue
        try:
            settings = json.loads((folder / name).read_text(encoding="utf-8"))
        except ValueError as exc:
            raise BundleError(f"{case_dir / name}: not valid JSON ({exc})") from None
        _write_json(folder / name, _without_secrets(settings))
    _write_json(folder / "case.json", _without_secrets(record.to_json()))
    how_to_run = regenerate.how_to_run(record) if regenerate is not None else ()
    readme = _readme(record, folder, left_out, how_to_run or _rerun(files))
    (folder / "README.md").write_text(readme, encoding="utf-8")


def _copy(source: Path, destination: Path, name: str, left_out: list[str]) -> None:
    """Copy a regular file or a real folder (recursively) that lives in the case folder; a
    symbolic link or a special file is never followed or read, only named in ``left_out``."""
    mode = source.lstat().st_mode
    if stat.S_ISDIR(mode):
        destination.mkdir()
        for child in sorted(source.iterdir()):
            _copy(child, destination / child.name, f"{name}/{child.name}", left_out)
        return
    if not stat.S_ISREG(mode):
        left_out.append(name)
        return
    try:  # O_NOFOLLOW: a file swapped for a link since lstat() is refused, not followed
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        left_out.append(name)
        return
    with os.fdopen(fd, "rb") as reading, destination.open("xb") as writing:
        shutil.copyfileobj(reading, writing)


def _write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _without_secrets(data: Any) -> Any:
    if isinstance(data, dict):
        return {
            key: _without_secrets(value)
            for key, value in data.items()
            if not SECRET_NAME.search(str(key))
        }
    if isinstance(data, list):
        return [_without_secrets(item) for item in data]
    return data


def _readme(
    record: CaseRecord, folder: Path, left_out: list[str], how_to_run: Sequence[str]
) -> str:
    source = record.source
    quote = " ".join(str(source.get("text", "")).split())
    lines = [
        f"# Reproduction: {md_escape(record.id)}",
        "",
        f"Operator {md_escape(record.op)}, {md_escape(record.dtype)}, platform "
        f"{md_escape(record.platform)}, run on **{md_escape(record.backend)}**.",
        "",
        "## What the documentation says",
        "",
        *(
            document_section(folder)
            or [
                f"- limit {md_escape(record.limit)}: the probed value {md_escape(record.value)} "
                f"is documented as **{md_escape(record.documented)}**",
                f"- source: {md_escape(source.get('seed', 'not recorded'))}, "
                f"{md_escape(source.get('section', ''))}",
                "",
                f"> {md_escape(quote) or 'no documented text recorded'}",
            ]
        ),
        "",
        "## What was observed",
        "",
        f"- verdict: **{md_escape(record.verdict)}**: {md_escape(record.detail)}",
    ]
    lines += [f"- {label}: {md_escape(text)}" for label, text in case_facts(record)]
    for label, values in (("tolerance", record.tolerance), ("versions", record.versions)):
        if values:
            text = ", ".join(f"{key}={value}" for key, value in sorted(values.items()))
            lines.append(f"- {label}: {md_escape(text)}")
    accuracy = accuracy_section(folder)
    lines += ["", *accuracy] if accuracy else []
    files = sorted(path.name + ("/" if path.is_dir() else "") for path in folder.iterdir())
    lines += [
        "",
        "## How to run",
        "",
        *how_to_run,
        "",
        "## Files",
        "",
        ", ".join([*files, "README.md"]),
    ]
    if left_out:
        lines += [
            "",
            "## Left out",
            "",
            "Symbolic links and special files in the case folder are not copied: "
            + md_escape(", ".join(left_out)),
        ]
    return "\n".join(lines) + "\n"


def _rerun(files: RecipeFiles) -> list[str]:
    """The README's "How to run" lines where the vendor gives none."""
    if files.script is not None:
        return [f"{files.script} in this folder reproduces the case."]
    return [
        "The vendor's recipe writes no reproduce script. To rerun the case, build and run "
        f"{MODEL} with the vendor's own tools on the inputs in inputs/ (one .npy file per model "
        "input, in the model's input order), then compare the outputs with reference/ (the "
        "host reference, one .npy per output) as the record's tolerance in case.json says; "
        "observed/ (or observed-summary.json) holds what this run saw.",
    ]


def _replacements(results_dir: Path, case_dir: Path) -> list[tuple[re.Pattern[str], str]]:
    """(pattern, replacement) pairs, most specific first."""
    paths: list[tuple[Path, str]] = [
        (case_dir.absolute(), "."),
        (case_dir.resolve(), "."),
        (results_dir.absolute(), "<results>"),
        (results_dir.resolve(), "<results>"),
        (Path.home(), "~"),
    ]
    pairs = [
        (re.compile(r"(?<![\w.-])" + re.escape(str(path)) + r"(?![\w.-])"), text)
        for path, text in paths
        if len(path.parts) > 1  # never "/" itself
    ]
    host = socket.gethostname()
    for name in sorted({host, host.split(".")[0]} - {""}, key=len, reverse=True):
        pairs.append((re.compile(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])"), "<host>"))
    return pairs


def _scrub_folder(
    folder: Path, replacements: list[tuple[re.Pattern[str], str]], script: str | None
) -> None:
    """Rewrite every text file but the vendor's reproduce ``script``, npu-hil's own fixed
    text."""
    kept = folder / script if script else None
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix not in BINARY_SUFFIXES and path != kept:
            text = redact(path.read_bytes().decode("utf-8", errors="replace"))
            for pattern, replacement in replacements:
                text = pattern.sub(replacement, text)
            path.write_text(text, encoding="utf-8")


def _write_tarball(folder: Path, path: Path, name: str) -> None:
    """``folder`` packed into ``path`` with members under ``name/``, owned by nobody in
    particular. gzip's fastest level: a bundle is mostly random input and output arrays,
    which level 9 packs only ~9% smaller but ~13x slower (64 bundles: 3.2 s against 41 s)."""

    def anonymous(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    with tarfile.open(path, mode="x:gz", compresslevel=1) as tar:
        tar.add(folder, arcname=name, filter=anonymous)
