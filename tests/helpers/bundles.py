"""Case folders as the executor writes them, and the repro template's text."""

from __future__ import annotations

import dataclasses
import importlib.resources
import importlib.util
import json
import socket
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper
from tests.helpers.records import make_record

from harness.results.journal import Journal
from harness.results.records import CaseRecord, case_slug
from harness.targets.job import Job
from harness.vendors.rknn.toolkit.calls import recipe


def template() -> str:
    files = importlib.resources.files("harness.vendors.rknn")
    return files.joinpath("repro_template.py").read_text(encoding="utf-8")


SECRET = "s3cret-Value-42"


def _add_model(path: Path) -> None:
    """y = a + b on 1x3x4x4 float32: tiny, two inputs (so their order matters), NPU-friendly."""
    shape = [1, 3, 4, 4]
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["y"])],
        "add",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape) for name in ("a", "b")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def write_case(
    results: Path, record: CaseRecord, int8: bool = False, observed_error: float = 1.0
) -> CaseRecord:
    """The case folder the executor writes (harness.results.journal), plus the journal line;
    the observed output is a + b + ``observed_error``."""
    case_dir = results / "cases" / case_slug(record.id)
    rng = np.random.default_rng(7)
    a, b = (rng.standard_normal((1, 3, 4, 4)).astype(np.float32) for _ in range(2))
    case_dir.mkdir(parents=True)
    _add_model(case_dir / "model.onnx")
    for folder, arrays in {"inputs": {"a": a, "b": b}, "reference": {"y": a + b}}.items():
        (case_dir / folder).mkdir()
        for index, (name, array) in enumerate(arrays.items()):
            np.save(case_dir / folder / f"{index}_{name}.npy", array)
    (case_dir / "observed").mkdir()
    np.save(case_dir / "observed" / "0_y.npy", a + b + observed_error)
    toolkit = {
        "target_platform": record.platform,
        "config": {"mean_values": None, "std_values": None, "passphrase": SECRET},
        "do_quantization": int8,
        "dataset": "dataset.txt" if int8 else None,
        "inference": {"data_format": "nchw"},
    }
    (case_dir / "toolkit.json").write_text(json.dumps(toolkit))
    # The vendor's recipe puts its reproduce.py into every case folder.
    (case_dir / "reproduce.py").write_bytes(recipe(Job(b"", [], record.platform))["reproduce.py"])
    if int8:
        (case_dir / "dataset").mkdir()
        np.save(case_dir / "dataset" / "0_a.npy", a)
        np.save(case_dir / "dataset" / "0_b.npy", b)
        (case_dir / "dataset.txt").write_text("dataset/0_a.npy dataset/0_b.npy\n")
    host = socket.gethostname()
    (case_dir / "build.log").write_text(
        f"I Loading {case_dir.resolve()}/model.onnx\n"
        f"D Export RKNN model to {results.resolve()}/cache/x.rknn\n"
        f"W cache in {Path.home()}/.cache/rknn, built on {host} by build@{host}\n"
        f"D password in the environment: {SECRET}\n"
    )
    record = dataclasses.replace(record, artifacts=f"cases/{case_dir.name}")
    Journal(results).append(record)
    return record


def _failing(
    case_id: str = "add-fp16-8193", verdict: str = "wrong-result", **fields: object
) -> CaseRecord:
    values: dict[str, object] = {
        "op": "Add",
        "placement": [{"op": "Add", "target": "NPU", "name": "Add:y"}],
        "tolerance": {"atol": 0.01, "rtol": 0.01, "atol_steps": 0.0, "min_cosine": 0.999},
        "limit": "add.width",
        "value": "w=8193",
        "documented": "supported",
        "detail": "3 of 48 elements outside tolerance, max abs error 1, cosine 0.9",
        "source": {
            "seed": "rknn_ops.md",
            "section": "Add",
            "text": "Add: width <= 8192 supported",
            "api_token": SECRET,
        },
    }
    values.update(fields)
    return make_record(case_id, verdict, **values)
