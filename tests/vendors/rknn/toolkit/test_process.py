"""The processes that import rknn-toolkit2 start with the interpreter they are given, so another
SDK's environment can convert and simulate (here a wrapper that notes each start)."""

from __future__ import annotations

import importlib.util
import stat
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from tests.fakes.sshd import onnx_model

from harness.targets.job import Job
from harness.vendors.rknn.toolkit.convert import ConversionCache
from harness.vendors.rknn.toolkit.simulator import SimulatorPool

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("rknn") is None, reason="rknn-toolkit2 is not installed"
)


def wrapper(tmp_path: Path) -> tuple[Path, Path]:
    """An interpreter that appends its module argument to a file, then is this Python."""
    starts = tmp_path / "starts"
    script = tmp_path / "python-of-another-sdk"
    script.write_text(f'#!/bin/sh\necho "$2" >> "{starts}"\nexec "{sys.executable}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, starts


def job(case_id: str) -> Job:
    x = np.ones((1, 3, 4, 4), np.float32)
    return Job(onnx_model("Relu"), [x], "rk3562", case_id=case_id)


def test_the_converter_runs_on_the_given_interpreter_and_lives_on(tmp_path: Path) -> None:
    python, starts = wrapper(tmp_path)
    cache = ConversionCache(tmp_path / "cache", python=str(python))
    try:
        first = cache.convert(job("a"))
        second = cache.convert(Job(onnx_model("Sigmoid"), [], "rk3562"))
    finally:
        cache.close()
    assert first.rknn_path is not None, first.infra_error
    assert second.rknn_path is not None, second.infra_error
    assert not first.cached and not second.cached
    assert starts.read_text().split() == ["harness.vendors.rknn.toolkit.convert"]  # one for both


def test_simulator_workers_run_on_the_given_interpreter(tmp_path: Path) -> None:
    python, starts = wrapper(tmp_path)
    with SimulatorPool(python=str(python)) as pool:
        observations = pool.run_many([job("a"), job("b")])
    assert all(o.infra_error is None and o.outputs is not None for o in observations)
    assert starts.read_text().split() == ["harness.vendors.rknn.toolkit.simulator.worker"]


def test_a_converter_that_died_with_the_thread_that_started_it_costs_no_model(
    tmp_path: Path,
) -> None:
    """The converter dies with the thread that started it (a board target's conversion
    thread); a cache that outlives that target starts a new one for its next build."""
    cache = ConversionCache(tmp_path / "cache")
    try:
        started = ThreadPoolExecutor(1)
        first = started.submit(cache.convert, job("a")).result()
        started.shutdown()  # the thread ends, and the idle converter with it
        second = cache.convert(Job(onnx_model("Sigmoid"), [], "rk3562"))
    finally:
        cache.close()
    assert first.rknn_path is not None, first.infra_error
    assert second.rknn_path is not None, second.infra_error


def test_a_converter_killed_while_idle_costs_no_model(tmp_path: Path) -> None:
    """A converter killed between builds (the out-of-memory killer, a stray kill) is replaced
    before the next build is sent to it."""
    cache = ConversionCache(tmp_path / "cache")
    try:
        first = cache.convert(job("a"))
        assert cache._converter is not None
        idle = cache._converter.process
        idle.kill()
        idle.wait()
        second = cache.convert(Job(onnx_model("Sigmoid"), [], "rk3562"))
    finally:
        cache.close()
    assert first.rknn_path is not None, first.infra_error
    assert second.rknn_path is not None, second.infra_error
