"""Repository-level pytest configuration.

The npu-hil pytest plugin itself is registered through the ``pytest11`` entry point of the
installed package (see pyproject.toml), so `pytest suites/` works from any directory.
"""
