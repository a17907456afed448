"""Rockchip's documents read as data: the operator lists (``operator_list/``: extracted from
the text, committed as YAML, loaded as ``harness.documented`` records), the operators probed per
platform, which document an SDK release is judged against, the model-I/O rules (seed 003),
the version compatibility rules, the board conditions of timed runs, the documented
properties and the layer-name aliases. Their YAML lives in the vendor's ``data/``; the
vocabulary (limits, documents, formulas) is the neutral ``harness.documented``."""
