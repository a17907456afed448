"""Horizon Journey 6 (J6E/M/B, J6H/P, S6P): seed 000's input stride rules, as a vendor.

No public runtime or compiler exists for these platforms, so the vendor has no simulator and
no board target: its rules are catalogue data (``data/stride-rules.yaml``, the document's text
verbatim), computed by ``layout`` (``hil layout horizon``) and checked by its suite
(``suites/test_horizon_layout.py``) against the document's own worked examples.
"""
