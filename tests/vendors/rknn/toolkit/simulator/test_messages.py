"""Messages to and from a simulator worker: small ones whole, large ones through a file."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from harness.vendors.rknn.toolkit.simulator.messages import (
    INLINE_BYTES,
    InFolder,
    Pickled,
    carried,
    opened,
)


def test_a_small_message_is_carried_as_its_pickle_and_writes_no_file(tmp_path: Path) -> None:
    message = {"outputs": [np.arange(16, dtype=np.float32)], "timings": {"run_s": 0.5}}
    note = carried(message, tmp_path, "reply.pickle")
    assert isinstance(note, Pickled) and len(note.data) <= INLINE_BYTES
    assert list(tmp_path.iterdir()) == []
    back = opened(note, tmp_path)
    assert back["timings"] == {"run_s": 0.5}
    np.testing.assert_array_equal(back["outputs"][0], message["outputs"][0])


def test_a_large_message_goes_through_a_file_and_reads_back_equal(tmp_path: Path) -> None:
    outputs = [np.linspace(0, 1, INLINE_BYTES // 4 + 1, dtype=np.float32)]  # just over
    note = carried({"outputs": outputs, "timings": {"run_s": 0.5}}, tmp_path, "reply.pickle")
    assert note == InFolder("reply.pickle")
    assert (tmp_path / "reply.pickle").stat().st_size > INLINE_BYTES
    back = opened(note, tmp_path)
    assert back["timings"] == {"run_s": 0.5}
    np.testing.assert_array_equal(back["outputs"][0], outputs[0])
