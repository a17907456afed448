"""A bundle README's per-layer sections from the case folder's tables, and what an unreadable
table gives: words in its section, never a bundle lost."""

from __future__ import annotations

import json
from pathlib import Path

from harness.report.layer_sections import accuracy_section, document_section


def test_no_tables_no_sections(tmp_path: Path) -> None:
    assert document_section(tmp_path) == [] and accuracy_section(tmp_path) == []


def test_an_unreadable_table_is_named_in_its_section(tmp_path: Path) -> None:
    (tmp_path / "document-check.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "layers.json").write_text("[", encoding="utf-8")
    (said,) = document_section(tmp_path)
    assert said.startswith("document-check.json could not be read:")
    assert accuracy_section(tmp_path)[2].startswith("layers.json could not be read:")
    (tmp_path / "document-check.json").write_text('{"document": "d"}', encoding="utf-8")
    (tmp_path / "layers.json").write_text('[{"cosine": "high"}]', encoding="utf-8")
    assert document_section(tmp_path) == ["document-check.json could not be read: no field 'dtype'"]
    assert accuracy_section(tmp_path)[2].startswith("layers.json could not be read:")


def test_the_first_layer_past_tolerance_is_marked_and_a_layer_not_observed_said(
    tmp_path: Path,
) -> None:
    layers = [
        {"index": 0, "node": "conv|1", "op": "Conv", "compiled": "ConvRelu", "placement": "NPU",
         "dtype": "INT8", "passed": True, "cosine": 0.9999, "max_abs": 0.01, "detail": "",
         "first_past_tolerance": False},
        {"index": 1, "node": "pool", "op": "MaxPool", "compiled": "", "placement": "",
         "dtype": "", "passed": False, "cosine": 0.99, "max_abs": 0.5, "detail": "2 of 9",
         "first_past_tolerance": True},
        {"index": 2, "node": "y", "op": "Sigmoid", "compiled": "", "placement": "", "dtype": "",
         "passed": None, "cosine": None, "max_abs": None, "detail": "not observed",
         "first_past_tolerance": False},
    ]  # fmt: skip
    (tmp_path / "layers.json").write_text(json.dumps(layers), encoding="utf-8")
    rows = accuracy_section(tmp_path)[-3:]
    assert rows == [
        "| 0 | conv\\|1 | Conv | ConvRelu NPU INT8 | 0.999900 | 0.01 | ok |",
        "| 1 | pool | MaxPool | - | 0.990000 | 0.5 | **first past tolerance**: 2 of 9 |",
        "| 2 | y | Sigmoid | - | - | - | not observed |",
    ]
