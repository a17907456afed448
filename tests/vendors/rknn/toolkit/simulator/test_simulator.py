"""The simulator target against the real rknn-toolkit2 simulator.

Faults (worker crash, hang, a kill from outside) are injected through the worker's test-only
NPU_HIL_SIM_FAULT hook, besides a real toolkit crash (a one-input Max).
"""

from __future__ import annotations

import io
import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import psutil
import pytest
from onnx import TensorProto, helper
from tests.fakes.sshd import onnx_model
from tests.helpers.caches import entry_body, rewrite_entry
from tests.helpers.children import default_signals
from tests.helpers.models import MAX_ONE_INPUT
from tests.helpers.paths import SUITE, TESTS

from harness.diskcache import arrays_digest
from harness.targets.job import DrawnCalibration, Job
from harness.targets.observation import Observation
from harness.vendors.rknn.toolkit.buildlog import parse_build_log
from harness.vendors.rknn.toolkit.calls import (
    LOG_FILE,
    STAGE_FILE,
    note_stage,
    read_stage,
    recipe,
    toolkit_calls,
    write_dataset,
)
from harness.vendors.rknn.toolkit.simulator import SimCache, SimulatorPool
from harness.vendors.rknn.toolkit.simulator import cache as simulator_cache
from harness.vendors.rknn.toolkit.simulator.worker import FAULT_ENV, FAULT_MARKS_ENV

pytest.importorskip("rknn.api", reason="rknn-toolkit2 (the simulator) is not installed")

SHAPE = [1, 3, 4, 4]
RNG = np.random.default_rng(20240501)


def model(op: str, inputs: list[str]) -> bytes:
    """A one-node float32 ONNX model; the inputs and the output "y" all have SHAPE."""
    graph = helper.make_graph(
        [helper.make_node(op, inputs, ["y"], name=op.lower())],
        "case",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, SHAPE) for n in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    proto.ir_version = 8
    return proto.SerializeToString()


SUB = model("Sub", ["a", "b"])
SIGMOID = model("Sigmoid", ["x"])


def sample(n: int = 1) -> list[np.ndarray]:
    return [RNG.random(SHAPE, dtype=np.float32) for _ in range(n)]


def sub_request(case_id: str, inputs: list[np.ndarray] | None = None, **kwargs: Any) -> Job:
    """A rk3562 request for SUB (y = a - b) with fresh random inputs unless given."""
    return Job(SUB, inputs or sample(2), "rk3562", case_id=case_id, **kwargs)


@pytest.fixture(scope="module")
def pool() -> Iterator[SimulatorPool]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(FAULT_ENV, "exit:exit-me,segv:segv-me")  # read by the worker, per case id
        with SimulatorPool(workers=1, timeout_s=60) as shared:
            yield shared


def serving(worker: int) -> list[int]:
    """The process ids of a worker's serving child (``worker.py``)."""
    return [child.pid for child in psutil.Process(worker).children()]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_fp16_case_runs_on_the_npu_and_matches_numpy(pool: SimulatorPool) -> None:
    request = sub_request("fp16-sub")
    obs = pool.run(request)
    assert (obs.failed_stage, obs.error, obs.infra_error) == (None, None, None)
    a, b = request.inputs
    (out,) = obs.outputs or []
    assert out.dtype == np.float32 and out.shape == tuple(SHAPE)
    np.testing.assert_allclose(out, a - b, atol=2e-3)  # fp16; a swapped input order fails
    assert [(e["op"], e["target"], e["dtype"]) for e in obs.placement if e["op"] == "Sub"] == [
        ("Sub", "NPU", "FLOAT16")
    ]
    assert {t["format"] for t in obs.tensors} >= {"NC1HWC2"}
    assert "Network Layer Information Table" in obs.log
    assert obs.backend == "simulator"
    assert set(obs.versions) == {"rknn_toolkit2", "python", "numpy", "onnx"}
    assert obs.versions["rknn_toolkit2"] == "2.5.0"
    assert set(obs.timings) == {"build_s", "run_s"}


def test_a_worker_imports_this_harness_from_a_folder_that_holds_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -m`` looks in its working folder first: a worker started from a folder with
    a ``harness`` package of its own (another checkout, an unrelated project) still imports
    the harness that started it."""
    decoy = tmp_path / "harness"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("raise SystemExit('the decoy harness was imported')\n")
    monkeypatch.chdir(tmp_path)
    with SimulatorPool(timeout_s=60) as decoyed:
        observation = decoyed.run(sub_request("decoyed"))
    assert observation.infra_error is None and observation.outputs is not None


def test_int8_case_with_a_two_input_dataset_runs(pool: SimulatorPool) -> None:
    request = sub_request("int8-sub", quantize=True, dataset=[sample(2) for _ in range(4)])
    obs = pool.run(request)
    assert (obs.failed_stage, obs.error, obs.infra_error) == (None, None, None)
    assert {e["dtype"] for e in obs.placement} == {"INT8"}
    a, b = request.inputs
    (out,) = obs.outputs or []
    np.testing.assert_allclose(out, a - b, atol=0.03)  # int8 steps over the range [-1, 1]
    assert "Quantize calibration include 4 samples" in obs.log


def test_dataset_file_lists_each_samples_arrays_on_one_line(tmp_path: Path) -> None:
    samples = [sample(2) for _ in range(3)]
    listing = write_dataset(samples, tmp_path)
    lines = listing.read_text().splitlines()
    assert len(lines) == 3
    for line, arrays in zip(lines, samples, strict=True):
        paths = line.split(" ")
        assert len(paths) == 2
        for path, array in zip(paths, arrays, strict=True):
            np.testing.assert_array_equal(np.load(tmp_path / path), array)


def test_a_stage_note_overwrites_the_last_in_place_and_reads_back_whole(tmp_path: Path) -> None:
    assert read_stage(tmp_path) == ""
    note_stage(tmp_path, "build load_onnx")
    inode = (tmp_path / STAGE_FILE).stat().st_ino
    note_stage(tmp_path, "runtime inference")
    note_stage(tmp_path, "build RKNN")  # shorter than the note before it
    assert read_stage(tmp_path) == "build RKNN"
    assert (tmp_path / STAGE_FILE).stat().st_ino == inode


def test_a_recipe_lists_drawn_calibration_files_and_draws_them_only_when_read() -> None:
    """A case folder that keeps no arrays never pays for drawing its calibration samples."""
    inputs, draws = sample(2), []
    calibration = drawn_calibration(inputs, [7, 8], draws)
    files = recipe(Job(SUB, inputs, "rk3562", quantize=True, dataset=calibration))
    names = [f"dataset/sample{s}_input{i}.npy" for s in range(3) for i in range(2)]
    assert set(names) | {"dataset.txt", "toolkit.json", "reproduce.py"} == set(files)
    assert files["dataset.txt"].decode().splitlines()[2] == " ".join(names[4:])
    assert draws == [] and not calibration.drawn
    first = np.load(io.BytesIO(files["dataset/sample0_input1.npy"]))
    assert np.array_equal(first, inputs[1]) and draws == []  # the inputs themselves
    last = np.load(io.BytesIO(files["dataset/sample2_input1.npy"]))
    assert draws == [7, 8] and np.array_equal(last, calibration[2][1])


def test_toolkit_calls_describe_the_configuration() -> None:
    request = sub_request("calls", config={"optimization_level": 2})
    calls = toolkit_calls(request)
    assert calls["config"] == {"target_platform": "rk3562", "optimization_level": 2}
    assert calls["build"] == {"do_quantization": False, "dataset": None}
    assert calls["inference"] == {"data_format": "nchw"}
    assert list(calls) == ["RKNN", "config", "load_onnx", "build", "init_runtime", "inference"]


def test_extra_config_reaches_the_toolkit(pool: SimulatorPool) -> None:
    obs = pool.run(sub_request("bad-config", config={"float_dtype": "float64"}))
    assert obs.failed_stage == "build"
    assert obs.error is not None and obs.error.startswith("config: ")
    assert "float64" in obs.error


def test_a_model_the_toolkit_refuses_fails_at_build(pool: SimulatorPool) -> None:
    nonzero = helper.make_model(
        helper.make_graph(
            [helper.make_node("NonZero", ["x"], ["y"], name="nz")],
            "case",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
            [helper.make_tensor_value_info("y", TensorProto.INT64, [4, None])],
        ),
        opset_imports=[helper.make_opsetid("", 13)],
    )
    nonzero.ir_version = 8
    onnx.checker.check_model(nonzero)  # valid ONNX: the refusal is the toolkit's
    request = Job(nonzero.SerializeToString(), sample(), "rk3562", case_id="nonzero")
    obs = pool.run(request)
    assert (obs.failed_stage, obs.outputs, obs.infra_error) == ("build", None, None)
    assert obs.error == (
        "build: ValueError: The input 0 of NonZero('nz') need to be constant! It will cause the"
        " graph to be a dynamic graph! Remove NonZero('nz') manually and try again!"
    )
    assert "need to be constant" in obs.log


def test_wrong_input_shape_fails_at_runtime(pool: SimulatorPool) -> None:
    x = RNG.random([1, 2, 4, 4], dtype=np.float32)
    obs = pool.run(Job(SIGMOID, [x], "rk3562", case_id="wrong-shape"))
    assert (obs.failed_stage, obs.infra_error) == ("runtime", None)
    assert obs.error is not None and obs.error.startswith("inference: ValueError:")
    assert "build_s" in obs.timings and obs.placement  # the build itself succeeded


@pytest.mark.parametrize(("case_id", "how"), [("exit-me", "exit code 3"), ("segv-me", "SIGSEGV")])
def test_a_worker_that_dies_the_same_way_twice_is_a_toolkit_crash(
    pool: SimulatorPool, case_id: str, how: str
) -> None:
    pool.start()  # its worker, whether or not an earlier test of the module started it
    (worker,) = pool.pids()
    before = serving(worker)
    obs = pool.run(sub_request(case_id))
    assert (obs.failed_stage, obs.aborted, obs.infra_error, obs.outputs) == (
        "build",
        how,
        None,
        None,
    )
    assert obs.error == (
        f"compiler crash ({how} in rknn.build); confirmed: the same crash again in a fresh "
        "worker process"
    )
    if case_id == "segv-me":  # faulthandler wrote into the case's own log
        assert "Fatal Python error: Segmentation fault" in obs.log
    assert not any(alive(pid) for pid in before)  # both runs' serving children died
    after = pool.run(sub_request("after-crash"))
    assert after.infra_error is None and after.outputs is not None
    assert pool.pids() == [worker]  # the worker forked fresh children: no second import
    assert serving(worker) and set(serving(worker)).isdisjoint(before)


def test_after_a_crash_the_same_worker_serves_without_importing_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The crash, its rerun and the next case: one worker, each case in a fresh child."""
    monkeypatch.setenv(FAULT_ENV, "exit:exit-me")
    with SimulatorPool(workers=1, timeout_s=60) as fresh:
        fresh.run(sub_request("before"))
        (worker,) = fresh.pids()
        (first_child,) = serving(worker)
        crashed = fresh.run(sub_request("exit-me"))
        after = fresh.run(sub_request("after"))
        assert fresh.pids() == [worker]
        (child,) = serving(worker)
        assert child != first_child and not alive(first_child)
    assert crashed.aborted == "exit code 3" and crashed.infra_error is None
    assert after.infra_error is None and after.outputs is not None
    assert not alive(worker) and not alive(child)  # close() stopped both


@pytest.mark.parametrize("killed", ["worker", "serving child"])
def test_an_idle_worker_killed_between_cases_is_replaced_not_blamed_on_the_next(
    killed: str,
) -> None:
    """The out-of-memory killer picks the biggest process: the worker or its serving child."""
    with SimulatorPool(workers=1, timeout_s=60) as fresh:
        fresh.run(sub_request("first"))
        (worker,) = fresh.pids()
        (child,) = serving(worker)
        os.kill(worker if killed == "worker" else child, signal.SIGKILL)
        while alive(worker) or alive(child):  # either takes the other down
            time.sleep(0.05)
        after = fresh.run(sub_request("after-kill"))
        assert worker not in fresh.pids()
    assert after.infra_error is None and after.outputs is not None


def test_a_worker_killed_once_is_rerun_and_twice_is_infrastructure_trouble(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FAULT_ENV, "segv-once:transient,kill:oom")
    monkeypatch.setenv(FAULT_MARKS_ENV, str(tmp_path))
    with SimulatorPool(timeout_s=60) as fresh:
        transient, killed = fresh.run_many([sub_request("transient"), sub_request("oom")])
    assert (transient.failed_stage, transient.infra_error) == (None, None)
    assert transient.outputs is not None  # the rerun's own result
    assert (killed.failed_stage, killed.outputs) == (None, None)
    assert killed.infra_error is not None
    assert killed.infra_error.startswith("worker killed by signal SIGKILL while running the case")
    assert killed.infra_error.endswith(
        "(the first run died too: worker killed by signal SIGKILL while running the case)"
    )


def test_a_real_compiler_crash_is_a_failed_build_served_from_the_cache(tmp_path: Path) -> None:
    """rknn-toolkit2 2.5.0 segfaults compiling a one-input Max (compiler pass OpEmit)."""
    request = Job(MAX_ONE_INPUT, [RNG.random([3], dtype=np.float32)], "rk3562", case_id="max1")
    with SimulatorPool(timeout_s=60, cache=SimCache(tmp_path)) as crashing:
        obs = crashing.run(request)
        again = crashing.run(request)
        assert crashing.toolkit_runs == 2  # the crash and its confirming rerun; then the cache
    assert (obs.failed_stage, obs.aborted, obs.infra_error) == ("build", "SIGSEGV", None)
    assert obs.error == (
        "compiler crash (SIGSEGV in rknn.build, compiler pass OpEmit); confirmed: the same "
        "crash again in a fresh worker process"
    )
    assert (again.failed_stage, again.aborted, again.error) == ("build", "SIGSEGV", obs.error)


def test_a_hung_worker_times_out_while_the_other_worker_serves_the_batch() -> None:
    batch = [sub_request("hang-me"), *(sub_request(f"ok-{i}") for i in range(3))]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(FAULT_ENV, "hang:hang-me")
        with SimulatorPool(workers=2, timeout_s=2) as two:
            two.run_many([sub_request("warm-a"), sub_request("warm-b")])
            started = set(two.pids())
            hung, *served = two.run_many(batch)
            (survivor,) = two.pids()
            (killed,) = started - {survivor}
            assert not alive(killed)
            after = two.run_many([sub_request("after-a"), sub_request("after-b")])
            assert len(set(two.pids()) - started) == 1  # a fresh worker took the hung one's place
    assert hung.infra_error == "timed out after 2 s"
    assert (hung.failed_stage, hung.outputs) == (None, None)
    for request, obs in zip(batch[1:], served, strict=True):  # results in request order
        assert obs.infra_error is None and obs.outputs is not None
        np.testing.assert_allclose(obs.outputs[0], request.inputs[0] - request.inputs[1], atol=2e-3)
    assert [obs.infra_error for obs in after] == [None, None]


def test_cache_hit_returns_the_same_observation_without_the_toolkit(tmp_path: Path) -> None:
    request = sub_request("cached")
    with SimulatorPool(cache=SimCache(tmp_path)) as first:
        fresh = first.run(request)
        again = first.run(request)
        assert first.toolkit_runs == 1
        pids = first.pids()
    assert pids and not any(alive(pid) for pid in pids)  # close() left no worker behind
    # Another process (an xdist worker) with its own cache object shares the entries.
    with SimulatorPool(cache=SimCache(tmp_path)) as second:
        shared = second.run(request)
        changed = request.inputs[0].copy()
        changed.flat[0] += 0.5
        miss = second.run(sub_request("cached", inputs=[changed, request.inputs[1]]))
        assert second.toolkit_runs == 1  # only the changed input ran
    assert fresh.outputs is not None and miss.outputs is not None
    for hit in (again, shared):
        assert hit.outputs is not None
        assert np.array_equal(hit.outputs[0], fresh.outputs[0])
        assert hit.outputs[0].dtype == fresh.outputs[0].dtype
        rest = {k: v for k, v in vars(hit).items() if k != "outputs"}
        assert rest == {k: v for k, v in vars(fresh).items() if k != "outputs"}
    assert not np.array_equal(miss.outputs[0], fresh.outputs[0])


def test_a_worker_gets_its_next_job_before_the_parent_stores_its_last_result(
    tmp_path: Path,
) -> None:
    """The parsing and storing of a reply overlap the worker's next case, and the case after
    it waits in the worker's pipe: the worker does not wait for the parent between cases."""

    handed_over: list[int] = []  # jobs handed to the worker when each result was stored

    class Recording(SimCache):
        def store(self, key: str, observation: Observation) -> Observation:
            handed_over.append(pool.toolkit_runs)
            return super().store(key, observation)

    jobs = [sub_request(f"overlap-{n}") for n in range(5)]
    with SimulatorPool(cache=Recording(tmp_path)) as pool:
        observations = list(pool.stream(jobs))
    assert all(o.outputs is not None for o in observations)
    # each result was stored after the two jobs after it were handed to the worker (one
    # running, one waiting in its pipe), while there were any
    assert handed_over == [3, 4, 5, 5, 5]


def test_a_case_waiting_behind_a_killed_worker_runs_in_a_fresh_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(FAULT_ENV, "kill-worker:oom")
    jobs = [sub_request("oom"), sub_request("waiting"), sub_request("after")]
    with SimulatorPool(workers=1, timeout_s=60) as fresh:
        killed, waiting, after = fresh.run_many(jobs)
        # the killed case twice, then the two others once each: a job that only waited in
        # the dead worker's pipe is handed out again, not counted twice
        assert fresh.toolkit_runs == 4
    assert killed.infra_error is not None
    assert killed.infra_error.startswith("worker killed by signal SIGKILL while running the case")
    for request, obs in ((jobs[1], waiting), (jobs[2], after)):
        assert obs.infra_error is None and obs.outputs is not None
        np.testing.assert_allclose(obs.outputs[0], request.inputs[0] - request.inputs[1], atol=2e-3)


def test_a_case_waiting_behind_a_hung_one_gets_its_own_time_in_a_fresh_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(FAULT_ENV, "hang:hang-me")
    jobs = [sub_request("hang-me"), sub_request("waiting")]
    with SimulatorPool(workers=1, timeout_s=3) as fresh:
        hung, waiting = fresh.run_many(jobs)
    assert hung.infra_error == "timed out after 3 s"
    assert waiting.infra_error is None and waiting.outputs is not None
    np.testing.assert_allclose(waiting.outputs[0], jobs[1].inputs[0] - jobs[1].inputs[1], atol=2e-3)


def test_jobs_and_replies_larger_than_a_pipe_never_wait_on_each_other() -> None:
    """A job queued through the pipe while the worker runs a case with a large reply would
    wait for the worker to read it, the worker for the parent to read its reply: large jobs
    and replies go through files in the case folder instead."""
    shape = (1, 4, 256, 256)  # 4 MiB of float32 in, and out: larger than any pipe
    model = onnx_model("Relu", shape)
    jobs = [
        Job(model, [RNG.standard_normal(shape, dtype=np.float32)], "rk3562", case_id=f"big-{n}")
        for n in range(3)
    ]
    done: list[Observation] = []
    with SimulatorPool(workers=1, timeout_s=120) as fresh:
        runner = threading.Thread(target=lambda: done.extend(fresh.run_many(jobs)), daemon=True)
        runner.start()
        runner.join(300)
        assert not runner.is_alive(), "the pool and its worker wait on each other"
    for job, obs in zip(jobs, done, strict=True):
        assert obs.outputs is not None, obs.infra_error
        np.testing.assert_allclose(obs.outputs[0], np.maximum(job.inputs[0], 0), atol=2e-2)


def test_start_imports_the_toolkit_in_the_worker_that_then_serves_the_cases() -> None:
    with SimulatorPool(workers=1, timeout_s=60) as fresh:
        fresh.start()
        (worker,) = fresh.pids()
        assert fresh.toolkit_runs == 0
        observation = fresh.run(sub_request("after-start"))
        assert fresh.pids() == [worker]
    assert observation.outputs is not None and observation.versions["rknn_toolkit2"]


def test_cache_refuses_board_results_and_skips_infra_errors(tmp_path: Path) -> None:
    cache = SimCache(tmp_path)
    request = sub_request("not-cached")
    request_key = cache.key(request)
    with pytest.raises(ValueError, match="only holds simulator results"):
        cache.store(request_key, Observation(backend="rk3562-board-1", outputs=sample()))
    cache.store(request_key, Observation(backend="simulator", infra_error="timed out after 1 s"))
    assert cache.observation(request_key) is None
    cache.store(request_key, Observation(backend="simulator", failed_stage="build", error="no"))
    hit = cache.observation(request_key)
    assert hit is not None and (hit.failed_stage, hit.error, hit.outputs) == ("build", "no", None)


def test_cache_key_covers_every_setting(tmp_path: Path) -> None:
    cache = SimCache(tmp_path)
    base = sub_request("key")
    a, b = base.inputs
    variants = [
        Job(SIGMOID, [a], "rk3562"),
        Job(SUB, [a, b + 1], "rk3562"),
        Job(SUB, [a.astype(np.float64), b], "rk3562"),
        Job(SUB, [a.reshape(1, 3, 16), b], "rk3562"),
        Job(SUB, [a, b], "rk3588"),
        Job(SUB, [a, b], "rk3562", config={"optimization_level": 2}),
        Job(SUB, [a, b], "rk3562", quantize=True, dataset=[[a, b]]),
        Job(SUB, [a, b], "rk3562", quantize=True, dataset=[[b, a]]),
    ]
    keys = {cache.key(r) for r in [base, *variants]}
    assert len(keys) == len(variants) + 1
    assert cache.key(Job(SUB, [a.copy(), b.copy()], "rk3562", case_id="other")) == (cache.key(base))


def drawn_calibration(inputs: list[np.ndarray], seeds: list[int], draws: list[int]) -> Any:
    """Calibration samples drawn from ``seeds`` when read, each draw noted in ``draws``."""

    def draw(seed: int) -> list[np.ndarray]:
        draws.append(seed)
        rng = np.random.default_rng(seed)
        return [rng.random(array.shape, dtype=np.float32) for array in inputs]

    return DrawnCalibration(inputs, draw, seeds, {"drawn_like_inputs": "Sub"})


def test_drawn_calibration_is_keyed_by_its_recipe_and_drawn_only_for_the_toolkit(
    tmp_path: Path,
) -> None:
    """A warm run finds an int8 result by the samples' recipe without drawing them."""
    inputs = sample(2)
    draws: list[int] = []
    cold = drawn_calibration(inputs, [1, 2, 3], draws)
    job = Job(SUB, inputs, "rk3562", quantize=True, dataset=cold, case_id="int8")
    with SimulatorPool(cache=SimCache(tmp_path)) as first:
        fresh = first.run(job)
    assert draws == [1, 2, 3] and first.toolkit_runs == 1  # the worker got the arrays
    warm = drawn_calibration(inputs, [1, 2, 3], draws := [])
    with SimulatorPool(cache=SimCache(tmp_path)) as second:
        hit = second.run(Job(SUB, inputs, "rk3562", quantize=True, dataset=warm))
        assert second.toolkit_runs == 0
    assert draws == [] and not warm.drawn
    assert fresh.outputs is not None and hit.outputs is not None
    assert np.array_equal(hit.outputs[0], fresh.outputs[0])
    cache = SimCache(tmp_path)
    other_seeds = Job(
        SUB, inputs, "rk3562", quantize=True, dataset=drawn_calibration(inputs, [1, 2, 4], [])
    )
    changed = [inputs[0] + 1, inputs[1]]
    other_inputs = Job(
        SUB, changed, "rk3562", quantize=True, dataset=drawn_calibration(changed, [1, 2, 3], [])
    )
    given = Job(SUB, inputs, "rk3562", quantize=True, dataset=cold.samples())
    assert len({cache.key(j) for j in (job, other_seeds, other_inputs, given)}) == 4
    assert draws == []  # keys never draw
    received = pickle.loads(pickle.dumps(warm))  # what a worker gets: the drawn arrays
    assert type(received) is list and len(received) == 4 and draws == [1, 2, 3]
    for got, drawn in zip(received, warm.samples(), strict=True):
        assert all(np.array_equal(x, y) for x, y in zip(got, drawn, strict=True))


def test_no_worker_survives_a_killed_parent(tmp_path: Path) -> None:
    """The parent is SIGKILLed (no atexit, no close) while its worker hangs in a case: the
    kernel's parent-death signal must take the worker down too."""
    (tmp_path / "model.onnx").write_bytes(SIGMOID)
    script = textwrap.dedent(
        f"""
        import numpy as np
        from pathlib import Path
        from harness.targets.job import DrawnCalibration, Job
        from harness.vendors.rknn.toolkit.simulator import SimulatorPool
        model = Path({str(tmp_path / "model.onnx")!r}).read_bytes()
        pool = SimulatorPool(timeout_s=600)
        pool.run(Job(model, [np.ones({SHAPE}, np.float32)], "rk3562", case_id="warm-up"))
        print(pool.pids()[0], flush=True)
        pool.run(Job(model, [np.ones({SHAPE}, np.float32)], "rk3562", case_id="hang-me"))
        """
    )
    # TMPDIR: the killed parent cannot remove its case folder, pytest's tmp_path will.
    env = {**os.environ, FAULT_ENV: "hang:hang-me", "TMPDIR": str(tmp_path)}
    parent = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        env=env,
        preexec_fn=default_signals,
    )
    assert parent.stdout is not None
    worker = int(parent.stdout.readline())
    (child,) = serving(worker)
    try:
        deadline = time.monotonic() + 30
        while "npu-hil-sim-" not in os.readlink(f"/proc/{child}/cwd"):  # in the hung case
            assert time.monotonic() < deadline, "the worker never started the hanging case"
            time.sleep(0.05)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 10
        while (alive(worker) or alive(child)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(worker) and not alive(child)
    finally:  # leave nothing behind when the test fails
        parent.kill()
        parent.wait()
        for pid in (worker, child):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


# an operator's first typical case: no inside control runs before it
HANGING_CASE = "rk3562/Pow/int8/typical"


def start_hanging_suite(tmp_path: Path, temp: Path, name: str) -> subprocess.Popen[bytes]:
    """A real ``pytest suites/...`` run whose one case hangs in the simulator; temp files in
    ``temp``."""
    command = [sys.executable, "-m", "pytest", f"{SUITE}::test_documented_limit[{HANGING_CASE}]"]
    command += ["-p", "no:cacheprovider", "--backend", "sim", "--hil-cache", "off"]
    command += ["--results", str(tmp_path / f"results-{name}")]
    env = {
        **os.environ,
        FAULT_ENV: f"hang:{HANGING_CASE}",
        "TMPDIR": str(temp),
        "PYTHONPATH": str(SUITE.parents[1]),  # this checkout's plugin
    }
    return subprocess.Popen(
        command,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=default_signals,
    )


def case_folders(temp: Path) -> set[Path]:
    return set(temp.glob("npu-hil-sim-*"))


def wait_mid_case(run: subprocess.Popen[bytes], temp: Path, known: set[Path]) -> Path:
    """The case folder of ``run`` (its pid is in the name), not among ``known``, whose case has
    started (its toolkit log exists)."""
    deadline = time.monotonic() + 180  # collection and the toolkit's import, on a loaded host
    while True:
        mine = set(temp.glob(f"npu-hil-sim-{run.pid}-*"))
        started = [f for f in mine - known if (f / LOG_FILE).exists()]
        if started:
            return started[0]
        assert run.poll() is None, f"pytest ended with {run.returncode} before the hanging case"
        assert time.monotonic() < deadline, "the hanging case never started"
        time.sleep(0.1)


def test_sigterm_mid_case_kills_the_worker_and_removes_the_case_folder(tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    run = start_hanging_suite(tmp_path, temp, "terminated")
    try:
        wait_mid_case(run, temp, set())
        workers = [child.pid for child in psutil.Process(run.pid).children(recursive=True)]
        assert workers
        run.terminate()
        assert run.wait(timeout=60) == -signal.SIGTERM  # still ends as SIGTERM says
        assert case_folders(temp) == set()
        deadline = time.monotonic() + 10
        while any(map(alive, workers)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(map(alive, workers))
    finally:
        run.kill()
        run.wait()


def test_a_case_folder_left_by_sigkill_is_removed_by_the_next_pool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL cannot be caught: the folder stays until a pool starts, which removes it but
    not the folder of another run still in its case."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    killed = start_hanging_suite(tmp_path, temp, "killed")
    running = start_hanging_suite(tmp_path, temp, "running")
    try:
        left = wait_mid_case(killed, temp, set())
        in_use = wait_mid_case(running, temp, {left})
        killed.kill()
        killed.wait(timeout=60)
        assert case_folders(temp) == {left, in_use}
        monkeypatch.setattr(tempfile, "tempdir", str(temp))
        SimulatorPool().close()
        assert case_folders(temp) == {in_use}
    finally:
        for run in (killed, running):
            run.kill()
            run.wait()


def test_a_worker_that_cannot_import_the_toolkit_is_an_infra_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A broken "rknn" package ahead of the real one on the worker's path: a real import error.
    (tmp_path / "rknn").mkdir()
    (tmp_path / "rknn" / "__init__.py").write_text("raise ImportError('toolkit is broken')\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    with SimulatorPool() as broken:
        obs = broken.run(sub_request("no-toolkit"))
    assert obs.infra_error is not None
    assert obs.infra_error.startswith("worker failed to start:")
    assert "ImportError: toolkit is broken" in obs.infra_error
    assert (obs.failed_stage, obs.outputs, broken.toolkit_runs) == (None, None, 0)


def test_invalid_requests_are_refused_up_front() -> None:
    with pytest.raises(ValueError, match="needs a calibration dataset"):
        sub_request("q", quantize=True)
    with pytest.raises(ValueError, match="one array per input"):
        sub_request("q", quantize=True, dataset=[sample(1)])
    with pytest.raises(ValueError, match="not inside config"):
        sub_request("q", config={"target_platform": "rk3588"})


def _header(blob: bytes) -> tuple[Any, bytes]:
    """A packed entry's JSON header and the array bytes after it."""
    size = int.from_bytes(blob[:8], "little")
    return json.loads(blob[8 : 8 + size]), blob[8 + size :]


def _packed(header: bytes, rest: bytes) -> bytes:
    return len(header).to_bytes(8, "little") + header + rest


def _with_data(blob: bytes, change: Callable[[dict[str, Any]], Any]) -> bytes:
    header, rest = _header(blob)
    header["data"] = change(header["data"])
    return _packed(json.dumps(header).encode(), rest)


# A damaged entry's packed file, made from the good one; each is marked with its checksum
# again (but "flipped-output"), so that reading it, not its checksum, must find the damage.
CORRUPTIONS: dict[str, Callable[[bytes], bytes]] = {
    "not-json": lambda blob: _packed(b'{"data": {"backend": "simul', _header(blob)[1]),
    "not-utf8": lambda blob: _packed(b"\xff\xfe{}", _header(blob)[1]),
    "wrong-fields": lambda blob: _with_data(blob, lambda data: {**data, "x": 2}),
    "wrong-types": lambda blob: _with_data(blob, lambda data: {**data, "outputs": "two"}),
    "not-an-object": lambda blob: _with_data(blob, lambda data: [1, 2]),
    "outputs-miscounted": lambda blob: _with_data(blob, lambda data: {**data, "outputs": 2}),
    "no-parser-version": lambda blob: _with_data(
        blob, lambda data: {k: v for k, v in data.items() if k != "parser"}
    ),
    "array-cut-short": lambda blob: blob[:-1],
    "bytes-after-the-arrays": lambda blob: blob + b"\0",
    "flipped-output": lambda blob: blob[:-1] + bytes([blob[-1] ^ 0x40]),
}


@pytest.mark.parametrize("damage", sorted(CORRUPTIONS))
def test_a_damaged_cache_entry_is_a_miss_and_is_removed(tmp_path: Path, damage: str) -> None:
    cache = SimCache(tmp_path)
    request = sub_request("damaged")
    request_key = cache.key(request)
    cache.store(request_key, Observation(backend="simulator", outputs=sample(), log="ok"))
    entry = tmp_path / request_key[:2] / request_key
    assert cache.observation(request_key) is not None  # the good entry reads back
    damaged = CORRUPTIONS[damage](entry_body(entry))
    if damage == "flipped-output":  # the checksum catches it
        entry.write_bytes(entry.read_bytes().split(b"\n", 1)[0] + b"\n" + damaged)
    else:  # the checksum matches: the reading catches it
        rewrite_entry(entry, damaged)
    assert cache.observation(request_key) is None
    assert not entry.exists()  # so the next put stores a good one
    cache.store(request_key, Observation(backend="simulator", outputs=sample(), log="again"))
    hit = cache.observation(request_key)
    assert hit is not None and hit.log == "again"


def test_a_stored_result_keeps_its_outputs_digest_and_an_entry_from_before_has_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = SimCache(tmp_path)
    outputs = sample()
    request = sub_request("digest")
    request_key = cache.key(request)
    stored = cache.store(request_key, Observation(backend="simulator", outputs=outputs))
    assert stored.outputs_digest == arrays_digest(outputs)
    hit = cache.observation(request_key)
    assert hit is not None and hit.outputs_digest == stored.outputs_digest
    # what an npu-hil from before the digests stored: every field but that one
    older = sub_request("older")
    older_key = cache.key(older)
    fields = [name for name in simulator_cache._FIELDS if name != "outputs_digest"]
    monkeypatch.setattr(simulator_cache, "_FIELDS", fields)
    cache.store(older_key, Observation(backend="simulator", outputs=outputs))
    monkeypatch.undo()
    hit = cache.observation(older_key)
    assert hit is not None and hit.outputs_digest is None and hit.outputs is not None
    assert np.array_equal(hit.outputs[0], outputs[0])


def test_a_hit_serves_the_stored_parse_of_its_log_until_the_parser_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = (TESTS / "data" / "buildlogs" / "rk3562_fp16_maxpool_8x8.log").read_text()
    parsed = parse_build_log(log)
    assert parsed.layers and parsed.rewrites  # the log has something to parse
    cache = SimCache(tmp_path)
    request = sub_request("parsed")
    request_key = cache.key(request)
    # Stored as given: a placement the log does not show tells a stored parse from a fresh one.
    stored = [{"id": 1, "op": "Stored", "target": "NPU"}]
    cache.store(request_key, Observation(backend="simulator", log=log, placement=stored))
    hit = cache.observation(request_key)
    assert hit is not None and (hit.placement, hit.rewrites) == (stored, [])
    monkeypatch.setattr(simulator_cache, "PARSER_VERSION", "another parser")
    again = cache.observation(request_key)
    assert again is not None and again.log == log
    assert (again.placement, again.rewrites) == (parsed.layers, parsed.rewrites)
    assert again.tensors == parsed.tensors
