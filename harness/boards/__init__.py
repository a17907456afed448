"""Boards, vendor-neutral: inventory files, the transports (SSH, adb), discovery, on-board locking.

    from harness.boards.inventory import load_inventory
    from harness.vendors import run_vendor

    vendor = run_vendor()  # the run's: --vendor, HIL_VENDOR, the pin or the one runnable
    board = load_inventory(Path("boards"), vendor.runtimes)[0]
    with vendor.on_board(board, None, 600.0, None) as target:
        observation = target.run(Job(model=onnx, inputs=[x], target_platform="rk3562"))

Importing this package imports nothing else; ``ssh`` loads paramiko, ``adb`` adbutils. Runner
sessions and the backend that runs cases on a board belong to the vendor packages
(``harness.vendors``).
"""


class BoardError(RuntimeError):
    """Something about a board (connection, lock, runner) that says nothing about the NPU."""
