"""The constraint catalogue: vendor-documented limits, transcribed as YAML data under ``data/``."""

from harness.catalogue.intervals import Interval
from harness.catalogue.loader import CatalogueError

__all__ = ["CatalogueError", "Interval"]
