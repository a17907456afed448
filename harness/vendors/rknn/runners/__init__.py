"""The board runners: the host side of the Python runner and the C runner, their sessions and
batches, and ``board_files/`` (what a board receives)."""
