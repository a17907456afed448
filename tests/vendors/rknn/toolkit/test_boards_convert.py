"""The ONNX -> .rknn conversion cache, with the real rknn-toolkit2 in real child processes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
from tests.fakes.sshd import onnx_model, wait_until
from tests.helpers import paths

from harness.targets.job import Job
from harness.vendors.rknn.toolkit.buildlog import parse_build_log
from harness.vendors.rknn.toolkit.convert import Conversion, ConversionCache

X = np.ones((1, 3, 4, 4), np.float32)


def slow_model(layers: int = 40, channels: int = 128) -> bytes:
    """Chained 3x3 convolutions: about 1.5 s to build, so a fault surely lands mid-build."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(
            rng.standard_normal((channels, channels, 3, 3), np.float32), f"w{i}"
        )
        for i in range(layers)
    ]
    nodes = [
        helper.make_node("Conv", [f"t{i}", f"w{i}"], [f"t{i + 1}"], pads=[1, 1, 1, 1])
        for i in range(layers)
    ]
    shape = [1, channels, 64, 64]
    graph = helper.make_graph(
        nodes,
        "convs",
        [helper.make_tensor_value_info("t0", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(f"t{layers}", TensorProto.FLOAT, shape)],
        initializer=weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def request(model: bytes | None = None, **fields: object) -> Job:
    arguments: dict[str, object] = {"inputs": [X], "target_platform": "rk3562", **fields}
    return Job(model=model or onnx_model(), **arguments)  # type: ignore[arg-type]


def test_converts_once_and_keeps_the_build_log(board_cache: ConversionCache) -> None:
    first = board_cache.convert(request(onnx_model(shape=(1, 3, 4, 6))))
    assert first.error is None and first.infra_error is None
    assert first.rknn_path is not None and first.rknn_path.read_bytes()[:4] == b"RKNN"
    layers = parse_build_log(first.log).layers
    assert [layer["target"] for layer in layers if layer["op"] == "Relu"] == ["NPU"]
    again = board_cache.convert(request(onnx_model(shape=(1, 3, 4, 6))))
    assert again.cached and again.rknn_path == first.rknn_path and again.log == first.log
    assert not first.cached or first.build_s == again.build_s


def test_the_key_covers_model_calls_and_calibration_data(board_cache: ConversionCache) -> None:
    base = board_cache.key(request())
    sample = [[np.full((1, 3, 4, 4), 0.5, np.float32)]]
    assert board_cache.key(request(case_id="other", inputs=[X * 2])) == base
    different = [
        request(onnx_model("Sigmoid")),
        request(config={"optimization_level": 2}),
        request(quantize=True, dataset=sample),
        Job(model=onnx_model(), inputs=[X], target_platform="rk3588"),
    ]
    keys = {board_cache.key(r) for r in different}
    assert len(keys) == len(different) and base not in keys
    other_sample = [[np.full((1, 3, 4, 4), 0.25, np.float32)]]
    assert board_cache.key(request(quantize=True, dataset=sample)) != board_cache.key(
        request(quantize=True, dataset=other_sample)
    )


def test_a_rejected_model_is_a_cached_build_failure(board_cache: ConversionCache) -> None:
    rejected = board_cache.convert(request(b"not an onnx model"))
    assert rejected.rknn_path is None and rejected.infra_error is None
    assert rejected.error is not None and rejected.error.startswith("load_onnx")
    assert board_cache.convert(request(b"not an onnx model")).cached


def test_int8_build_ships_the_calibration_data(board_cache: ConversionCache) -> None:
    rng = np.random.default_rng(1)
    dataset = [[rng.standard_normal((1, 3, 4, 4)).astype(np.float32)] for _ in range(3)]
    built = board_cache.convert(request(onnx_model("Sigmoid"), quantize=True, dataset=dataset))
    assert built.error is None and built.rknn_path is not None
    dtypes = {layer["dtype"] for layer in parse_build_log(built.log).layers}
    assert "INT8" in dtypes


def test_parallel_processes_build_a_key_once(tmp_path: Path) -> None:
    script = (
        "import sys, numpy as np; sys.path.insert(0, sys.argv[2])\n"
        "from pathlib import Path\n"
        "from tests.fakes.sshd import onnx_model\n"
        "from harness.vendors.rknn.toolkit.convert import ConversionCache\n"
        "from harness.targets.job import Job\n"
        "r = Job(model=onnx_model('Tanh'), inputs=[], target_platform='rk3562')\n"
        "c = ConversionCache(Path(sys.argv[1])).convert(r)\n"
        "print(c.cached, c.rknn_path)\n"
    )
    root = str(paths.ROOT)
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(tmp_path), root], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [worker.communicate(timeout=300)[0].split() for worker in workers]
    assert all(worker.returncode == 0 for worker in workers)
    assert sorted(cached for cached, _ in outputs) == ["False", "True"]
    assert outputs[0][1] == outputs[1][1]
    assert not list(tmp_path.rglob(".staging-*"))


def _kill_converter_when_building(cache_dir: Path, times: int = 1, key: str = "") -> None:
    """Kill the converter building in ``cache_dir`` (it works in the staging folder), not the
    other caches' converters, which are this process's children too; ``times`` builds in a
    row, each in its own staging folder; with ``key``, only builds of that model (its first
    attempt and the rerun), whichever order the cache takes its requests in."""
    killed: set[Path] = set()
    pattern = f".staging-{key[:12]}*/started"
    for _ in range(times):
        assert wait_until(lambda: set(cache_dir.rglob(pattern)) - killed, timeout=120)
        killed.update(cache_dir.rglob(pattern))
        for child in psutil.Process(os.getpid()).children(recursive=True):
            try:
                if child.cwd().startswith(str(cache_dir)):
                    child.kill()
            except psutil.Error:  # an unrelated child that exited (or is a zombie) meanwhile
                continue


def _convert_while_killing(
    cache: ConversionCache, times: int
) -> tuple[list[Job], list[Conversion]]:
    requests = [request(slow_model()), request(onnx_model("Sigmoid"))]
    killer = threading.Thread(
        target=_kill_converter_when_building,
        args=(cache.directory, times, cache.key(requests[0])),
    )
    killer.start()
    try:
        return requests, cache.convert_many(requests)
    finally:
        killer.join()


def test_a_converter_killed_from_outside_reruns_the_build_in_a_fresh_one(tmp_path: Path) -> None:
    _, conversions = _convert_while_killing(ConversionCache(tmp_path), times=1)
    assert [c.infra_error for c in conversions] == [None, None]
    assert all(c.rknn_path is not None and not c.cached for c in conversions)


def test_a_converter_killed_twice_costs_only_the_build_in_flight(tmp_path: Path) -> None:
    cache = ConversionCache(tmp_path)
    requests, conversions = _convert_while_killing(cache, times=2)
    lost = [c for c in conversions if c.infra_error is not None]
    built = [c for c in conversions if c.rknn_path is not None]
    assert len(lost) == 1 and len(built) == 1  # the slow model, killed in both attempts
    assert lost[0].infra_error is not None and "status -9" in lost[0].infra_error
    assert "(the first run died too: converter exited with status -9)" in lost[0].infra_error
    assert lost[0].rknn_path is None and lost[0].error is None and lost[0].aborted is None
    retried = cache.convert(requests[conversions.index(lost[0])])  # not cached: built again
    assert not retried.cached and retried.rknn_path is not None


def test_a_build_past_the_timeout_is_killed_and_not_cached(tmp_path: Path) -> None:
    impatient = ConversionCache(tmp_path, timeout_s=0.3)
    started = time.monotonic()
    failed, fine = impatient.convert_many([request(slow_model()), request()])
    assert failed.infra_error is not None
    assert "did not finish within 0.3 s (converter killed)" in failed.infra_error
    assert fine.rknn_path is not None  # built by a new child after the kill
    assert time.monotonic() - started < 60
    assert len(list(tmp_path.rglob("meta.json"))) == 1  # only the good build was cached
    assert not list(tmp_path.rglob(".staging-*"))


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("meta.json", b'{"error": nul'),
        ("meta.json", b"\xff\xfe"),
        ("meta.json", b'{"error": null}'),
        ("meta.json", b"[]"),
        ("meta.json", b'{"error": 5, "build_s": 0.1}'),
        ("build.log", None),
    ],
    ids=["not-json", "not-utf8", "missing-field", "not-an-object", "wrong-type", "missing-log"],
)
def test_a_damaged_entry_is_rebuilt_not_a_failed_case(
    tmp_path: Path, name: str, content: bytes | None
) -> None:
    cache = ConversionCache(tmp_path)
    rejected = request(b"not an onnx model")
    first = cache.convert(rejected)
    damaged = tmp_path / first.key[:2] / first.key / name
    if content is None:
        damaged.unlink()
    else:
        damaged.write_bytes(content)
    again = cache.convert(rejected)
    assert not again.cached and again.error == first.error  # built anew
    assert cache.convert(rejected).cached


def test_an_entry_that_lost_its_rknn_file_is_rebuilt(tmp_path: Path) -> None:
    cache = ConversionCache(tmp_path)
    first = cache.convert(request())
    assert first.rknn_path is not None
    first.rknn_path.unlink()
    again = cache.convert(request())
    assert not again.cached and again.rknn_path is not None and again.rknn_path.is_file()


def test_a_converter_crash_confirmed_by_a_fresh_converter_is_a_cached_rejection(
    tmp_path: Path,
) -> None:
    """rknn-toolkit2 2.5.0 segfaults compiling a one-input Max; the board path converts on the
    host, so the crash is the conversion's, told from trouble as the simulator tells it."""
    from tests.helpers.models import MAX_ONE_INPUT

    request = Job(MAX_ONE_INPUT, [np.ones(3, np.float32)], "rk3562", case_id="max1")
    cache = ConversionCache(tmp_path, timeout_s=120)
    try:
        first = cache.convert(request)
        again = cache.convert(request)
    finally:
        cache.close()
    assert (first.rknn_path, first.infra_error, first.aborted) == (None, None, "SIGSEGV")
    assert first.error == (
        "compiler crash (SIGSEGV in rknn.build, compiler pass OpEmit); confirmed: the same "
        "crash again in a fresh worker process"
    )
    assert (again.cached, again.error, again.aborted) == (True, first.error, "SIGSEGV")
