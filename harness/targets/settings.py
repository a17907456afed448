"""A user's own build settings for their vendor's toolkit (``hil run --toolkit-config FILE``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class SettingsError(ValueError):
    """A settings file that cannot be used: the message names the file, the key and the value."""


@dataclass(frozen=True)
class BuildSettings:
    """What a settings file asks of every build: the toolkit's own keyword arguments (each
    job's ``config``), and the two a run decides itself, taken out of them."""

    config: dict[str, Any] = field(default_factory=dict)
    quantize: bool | None = None  # int8 (True) or a float build (False); None: not said
    dataset: Path | None = None  # a calibration list file (one line per sample), resolved
