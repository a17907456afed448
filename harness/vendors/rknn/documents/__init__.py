"""Rockchip's documents as the catalogue reads them: the model-I/O rules (seed 003) and their
data; the neutral stage (``harness.catalogue``) keeps the vocabulary."""
