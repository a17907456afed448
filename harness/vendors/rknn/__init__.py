"""Everything Rockchip RKNN2: platforms, toolkit calls, build-log parser, converter, simulator
workers, board runtimes (rknnlite runner, C runner), RKNN layout rules and the files boards
receive (``board_files/``, shipped as package data).

Nothing outside this package imports rknn-toolkit2; importing this package does not either.
"""

from pathlib import Path

BOARD_FILES = Path(__file__).resolve().parent / "board_files"
# Observation.tensors entries with this "source" were queried from a board's runtime
# (rknn_query: w_stride, size_with_stride, native layout), not read from the host build log.
QUERIED_TENSOR = "rknn_query"
