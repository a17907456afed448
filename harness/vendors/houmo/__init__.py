"""Houmo TCIM: seed 002's tensor storage, stride and YUV-split rules, as a vendor.

No public runtime or compiler exists for it, so the vendor has no simulator and no board
target: its rules are catalogue data (``data/storage-rules.yaml``, the document's text
verbatim), computed by ``layout`` (``hil layout tcim``) and checked by its suite
(``suites/test_houmo_layout.py``) against the document's own worked examples and invariants.
"""
