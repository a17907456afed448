"""Recipe files the same in many case folders of a run: one read-only copy, hard-linked."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tests.helpers.cli import hil
from tests.helpers.declared import MODELS

from harness.cases.operators import operator_cases
from harness.pipeline import CaseExecutor
from harness.results.records import case_folder, case_slug
from harness.results.same_files import SameFiles
from harness.vendors import vendor_named
from harness.vendors.rknn.documents.operators import seed_catalogue
from harness.vendors.rknn.toolkit.simulator import SimulatorPool
from harness.vendors.stages import stages_for


def test_the_same_bytes_are_one_read_only_file_and_other_bytes_another(tmp_path: Path) -> None:
    same = SameFiles()
    first, second, other = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    same.write(first, b"print('reproduce')\n")
    same.write(second, b"print('reproduce')\n")
    same.write(other, b"{}\n")
    assert first.stat().st_ino == second.stat().st_ino and first.stat().st_nlink == 2
    assert other.stat().st_ino != first.stat().st_ino and other.read_bytes() == b"{}\n"
    assert stat.S_IMODE(first.stat().st_mode) & 0o222 == 0  # nobody may write it in place


def test_a_file_written_over_is_replaced_and_its_links_keep_their_bytes(tmp_path: Path) -> None:
    same = SameFiles()
    same.write(tmp_path / "a", b"one")
    same.write(tmp_path / "b", b"one")
    same.write(tmp_path / "b", b"two")
    assert (tmp_path / "a").read_bytes() == b"one" and (tmp_path / "b").read_bytes() == b"two"


def test_when_the_first_copy_is_gone_the_next_is_written_and_linked_to(tmp_path: Path) -> None:
    same = SameFiles()
    same.write(tmp_path / "a", b"one")
    (tmp_path / "a").unlink()  # its case ran again and its folder was cleared
    same.write(tmp_path / "b", b"one")
    same.write(tmp_path / "c", b"one")
    assert (tmp_path / "b").read_bytes() == b"one"
    assert (tmp_path / "b").stat().st_ino == (tmp_path / "c").stat().st_ino


def test_a_runs_case_folders_share_their_recipe_and_a_bundle_holds_copies(tmp_path: Path) -> None:
    catalogue = seed_catalogue()
    cases = operator_cases(catalogue, MODELS, ops=["Pow"]).cases[:3]
    results = tmp_path / "results"
    stages = stages_for(vendor_named("rknn"), [catalogue])
    with SimulatorPool(workers=1) as pool:
        records = list(CaseExecutor(results, pool, stages).execute_many(cases))
    folders = [results / case_folder(record.id, record.sdk) for record in records]
    scripts = {(folder / "reproduce.py").stat().st_ino for folder in folders}
    assert len(scripts) == 1 and (folders[0] / "reproduce.py").stat().st_nlink == len(cases)
    models = {(folder / "model.onnx").stat().st_ino for folder in folders}
    assert len(models) == len(cases)  # each case's own model
    assert hil(["repro", str(results), records[0].id]) == 0
    copied = results / "bundles" / case_slug(records[0].id) / "reproduce.py"
    assert copied.stat().st_nlink == 1 and os.access(copied, os.W_OK)
    assert copied.read_bytes() == (folders[0] / "reproduce.py").read_bytes()
