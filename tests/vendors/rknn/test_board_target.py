"""RknnBoardTarget on a loopback board: real sshd, real runner, the toolkit simulator as runtime."""

from __future__ import annotations

import dataclasses
import stat
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.fakes.sshd import onnx_model, runner_processes, with_ssh
from tests.helpers import paths

from harness.boards.inventory import Board
from harness.targets.job import Job
from harness.vendors.rknn.board import RknnBoardTarget, board_target
from harness.vendors.rknn.runtimes import RknnLite
from harness.vendors.rknn.toolkit import sdk
from harness.vendors.rknn.toolkit.convert import ConversionCache

RNG = np.random.default_rng(7)


def relu_case(case_id: str, shape: tuple[int, ...] = (1, 3, 4, 4)) -> Job:
    x = RNG.standard_normal(shape).astype(np.float32)
    return Job(
        model=onnx_model("Relu", shape), inputs=[x], target_platform="rk3562", case_id=case_id
    )


def test_a_batch_runs_on_the_board_with_host_placement_and_board_versions(
    loopback_board: Board, board_cache: ConversionCache
) -> None:
    x0 = RNG.standard_normal((1, 3, 4, 4)).astype(np.float32)
    x1 = RNG.standard_normal((1, 3, 4, 4)).astype(np.float32)
    add = Job(
        model=onnx_model("Add", inputs=2), inputs=[x0, x1], target_platform="rk3562", case_id="add"
    )
    requests = [relu_case("relu"), add, relu_case("relu wide", (1, 8, 2, 16))]
    with RknnBoardTarget(loopback_board, cache=board_cache) as target:
        observations = target.run_batch(requests)
        runners = runner_processes(loopback_board.workdir)
        assert len(runners) == 1  # one persistent runner served the whole batch
    references = [
        np.maximum(requests[0].inputs[0], 0),
        x0 + x1,
        np.maximum(requests[2].inputs[0], 0),
    ]
    for observation, reference in zip(observations, references, strict=True):
        assert observation.backend == "loopback"
        assert observation.infra_error is None and observation.failed_stage is None
        assert observation.outputs is not None
        np.testing.assert_allclose(observation.outputs[0], reference, atol=2e-3)
        assert observation.outputs[0].dtype == np.float32
        assert {"board_inference_s", "board_init_s", "board_case_s"} <= set(observation.timings)
    relu, added = observations[0], observations[1]
    assert [layer["target"] for layer in relu.placement if layer["op"] == "Relu"] == ["NPU"]
    assert any(layer["op"] == "Add" for layer in added.placement)
    assert relu.tensors and "Network Layer Information Table" in relu.log
    versions = relu.versions
    assert versions["board"] == "loopback" and versions["board_soc"] == "rk3562"
    assert versions["board_npu_driver"] == "0.9.8"
    assert versions["board_runtime_library"].startswith("2.3.2")
    assert versions["rknn_toolkit2"] == "2.5.0" and versions["core_mask"] == "auto"
    assert "simulator" in versions["board_sdk"]
    # converted by 2.5.0 for a board whose librknnrt is 2.3.2: flagged in the record
    assert versions["version_warnings"].startswith(
        "converted with rknn-toolkit2 2.5.0 for a board runtime library 2.3.2 "
    )
    # Closed: no runner left, the work directory removed.
    assert runner_processes(loopback_board.workdir) == []
    assert not Path(loopback_board.workdir).exists()


def test_converting_with_the_boards_release_runs_the_converter_of_that_sdk(
    loopback_board: Board, tmp_path: Path, second_sdk: sdk.Sdk
) -> None:
    with board_target(loopback_board, tmp_path / "cache", 120.0, second_sdk.version) as target:
        (observation,) = target.run_batch([relu_case("relu")])
    assert observation.infra_error is None, observation.infra_error
    assert observation.versions["rknn_toolkit2"] == "2.3.2"  # the converter ran under 2.3.2
    assert "version_warnings" not in observation.versions  # the board's librknnrt is 2.3.2 too
    assert "Network Layer Information Table" in observation.log


def test_on_a_cold_start_the_runner_starts_while_the_host_converts(
    loopback_board: Board, tmp_path: Path
) -> None:
    """The converter's interpreter here waits (30 s at most) for a runner on the board before
    it starts: it sees one only if the target connects while the host converts."""
    seen = tmp_path / "runner seen by the converter"
    waiter = tmp_path / "wait_for_runner.py"
    waiter.write_text(
        f"import sys; sys.path.insert(0, {str(paths.ROOT)!r})\n"
        "from tests.fakes.sshd import runner_processes, wait_until\n"
        f"print(wait_until(lambda: runner_processes({loopback_board.workdir!r}), timeout=30))\n"
    )
    python = tmp_path / "python-after-the-runner"
    python.write_text(
        f'#!/bin/sh\n"{sys.executable}" "{waiter}" > "{seen}"\nexec "{sys.executable}" "$@"\n'
    )
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    cache = ConversionCache(tmp_path / "cache", python=str(python))
    with RknnBoardTarget(loopback_board, cache=cache) as target:
        (observation,) = target.run_batch([relu_case("relu")])
    assert observation.outputs is not None, observation.infra_error
    assert seen.read_text().strip() == "True"


def test_a_build_rejection_needs_no_board(
    loopback_board: Board, board_cache: ConversionCache, tmp_path: Path
) -> None:
    """The target tries the board while the host converts, but a batch with nothing to run
    neither waits for it nor gives it up."""
    broken = Job(model=b"\x08\x01garbage", inputs=[], target_platform="rk3562")
    unreachable = with_ssh(loopback_board, port=1)  # refuses every connection
    with RknnBoardTarget(unreachable, cache=board_cache) as target:
        observation = target.run(broken)
        assert target.down is None
    assert observation.failed_stage == "build" and observation.error
    assert observation.infra_error is None and observation.outputs is None


def test_a_runtime_rejection_is_a_runtime_failure(
    loopback_board: Board, board_cache: ConversionCache
) -> None:
    wrong = dataclasses.replace(
        relu_case("wrong input"), inputs=[np.ones((1, 3, 4, 5), np.float32)]
    )
    with RknnBoardTarget(loopback_board, cache=board_cache) as target:
        bad, good = target.run_batch([wrong, relu_case("fine")])
    assert bad.failed_stage == "runtime" and bad.error and bad.infra_error is None
    assert good.outputs is not None and good.failed_stage is None


def test_int8_case_ships_its_calibration_data(
    loopback_board: Board, board_cache: ConversionCache
) -> None:
    x = RNG.uniform(-1, 1, (1, 3, 4, 4)).astype(np.float32)
    dataset = [[RNG.uniform(-1, 1, (1, 3, 4, 4)).astype(np.float32)] for _ in range(4)]
    request = Job(
        model=onnx_model("Relu"),
        inputs=[x],
        target_platform="rk3562",
        quantize=True,
        dataset=dataset,
    )
    with RknnBoardTarget(loopback_board, cache=board_cache) as target:
        observation = target.run(request)
    assert observation.infra_error is None and observation.outputs is not None
    np.testing.assert_allclose(observation.outputs[0], np.maximum(x, 0), atol=0.05)
    assert "INT8" in {layer["dtype"] for layer in observation.placement}


def test_wrong_platform_and_misplaced_test_faults_are_refused(
    loopback_board: Board, board_cache: ConversionCache
) -> None:
    with RknnBoardTarget(loopback_board, cache=board_cache) as target:
        request = dataclasses.replace(relu_case("x"), target_platform="rk3588")
        with pytest.raises(
            ValueError, match="targets rk3588, but board loopback is platform rk3562"
        ):
            target.run(request)
        with pytest.raises(ValueError, match="unknown cases"):
            target.run_batch([relu_case("x")], test_faults={"nope": "hang"})
    lite = dataclasses.replace(loopback_board, runtime=RknnLite())
    with (
        RknnBoardTarget(lite, cache=board_cache) as target,
        pytest.raises(ValueError, match="test faults need"),
    ):
        target.run(relu_case("x"), test_fault="hang")


def test_a_board_without_the_runtime_is_down_with_the_reason(
    loopback_board: Board, board_cache: ConversionCache
) -> None:
    lite = dataclasses.replace(loopback_board, runtime=RknnLite())  # not installed here
    with RknnBoardTarget(lite, cache=board_cache) as target:
        first, second = target.run_batch([relu_case("a"), relu_case("b")])
        assert target.down is not None and "cannot load runtime" in target.down
    assert first.infra_error is not None and "rknnlite" in first.infra_error
    assert second.infra_error == first.infra_error
    assert runner_processes(loopback_board.workdir) == []
