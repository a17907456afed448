"""The vocabulary of vendor documents, shared by every vendor: limits, formulas, intervals,
documented properties, the document records of ``hil docs`` (Document > Group > Entry) and the
operators a document lists. Code, not data: each vendor package holds its documents' data."""

from harness.documented.intervals import Interval
from harness.safe_yaml import DataFileError

__all__ = ["DataFileError", "Interval"]
