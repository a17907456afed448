"""Boards, vendor-neutral: inventory files, the transports (SSH, adb), discovery, on-board locking.

    from harness.boards.inventory import load_inventory
    from harness.vendors.rknn.board import RknnBoardTarget
    from harness.vendors.rknn.runtimes import RUNTIMES

    board = load_inventory(Path("boards"), RUNTIMES)[0]
    with RknnBoardTarget(board) as backend:
        observation = backend.run(Job(model=onnx, inputs=[x], target_platform="rk3562"))

Importing this package imports nothing else; ``ssh`` loads paramiko, ``adb`` adbutils. Runner
sessions and the backend that runs cases on a board belong to the vendor packages
(``harness.vendors``).
"""


class BoardError(RuntimeError):
    """Something about a board (connection, lock, runner) that says nothing about the NPU."""
