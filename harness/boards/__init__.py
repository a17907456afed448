"""Boards over SSH: inventory files, discovery, on-board locking, the runner session, the backend.

    from harness.vendors.rknn.board import BoardBackend
    from harness.boards.inventory import load_inventory

    board = load_inventory(Path("boards"))[0]
    with BoardBackend(board) as backend:
        observation = backend.run(Job(model=onnx, inputs=[x], target_platform="rk3562"))

Importing this package imports nothing else; the submodules load paramiko and the toolkit.
"""


class BoardError(RuntimeError):
    """Something about a board (connection, lock, runner) that says nothing about the NPU."""
