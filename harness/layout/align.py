"""Shared alignment arithmetic for the vendor layout modules."""


def align_up(value: int, multiple: int) -> int:
    """Round ``value`` up to the next multiple of ``multiple`` (both non-negative, multiple > 0)."""
    if multiple <= 0:
        raise ValueError(f"align_up: multiple must be positive, got {multiple!r}")
    if value < 0:
        raise ValueError(f"align_up: value must be non-negative, got {value!r}")
    return -(-value // multiple) * multiple
