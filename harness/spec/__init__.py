"""The constraint catalogue: vendor-documented limits, transcribed as YAML data under ``data/``."""

from harness.spec.intervals import Interval
from harness.spec.loader import CatalogueError

__all__ = ["CatalogueError", "Interval"]
