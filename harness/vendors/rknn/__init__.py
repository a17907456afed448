"""Everything Rockchip RKNN2, in sub-packages by role: ``documents/`` (Rockchip's documents read
as data: operator lists, model-I/O rules, compatibility, conditions, properties),
``toolkit/`` (the calls, processes, converter, build-log parser and simulator of rknn-toolkit2),
``runners/`` (the board runners and ``board_files/``, what boards receive) and ``model_io/``
(seed 003's case source). ``board.py`` (the board target) and ``runtimes.py`` (what a board
file's runtime means) stay here, where repro bundles import them; ``vendor.py`` assembles the
``Vendor`` record. All data files live under ``data/``.

Nothing outside this package imports rknn-toolkit2; importing this package does not either.
"""

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"  # the vendor's one data root
BOARD_FILES = Path(__file__).resolve().parent / "runners" / "board_files"
# Observation.tensors entries with this "source" were queried from a board's runtime
# (rknn_query: w_stride, size_with_stride, native layout), not read from the host build log.
QUERIED_TENSOR = "rknn_query"
