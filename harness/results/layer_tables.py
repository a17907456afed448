"""The per-layer tables a user's model leaves in its case folder, which its repro bundle
copies: every layer against the platform's document, and every layer's accuracy against the
host reference (``hil run``, ``hil reduce``)."""

from __future__ import annotations

DOCUMENT_CHECK = "document-check.json"  # harness.cases.model_check.ModelCheck.to_json()
LAYER_ACCURACY = "layers.json"  # harness.triage.layers: one entry per layer, in graph order
LAYER_TABLES = (DOCUMENT_CHECK, LAYER_ACCURACY)
