"""A run's model declarations (``harness.models.Declarations``): the vendor-neutral operators'
and the vendor's own, by family."""

from __future__ import annotations

import re

from harness.models import DECLARATIONS, Declarations
from harness.models.activations import unary
from harness.vendors.rknn.vendor import VENDOR


def test_a_vendors_declarations_join_the_neutral_families_of_the_same_name() -> None:
    families = VENDOR.declarations.families
    assert {"exGlu", "exNorm", "exMatMul", "exSDPAttention", "exWindow"} == set(families["fused"])
    assert {"Relu", "Clip", "exSwish", "exMish", "exGelu"} <= set(families["activations"])
    assert {"Softmax", "exSoftmax13"} <= set(families["normalization"])
    assert set(DECLARATIONS.families) < set(families)  # fused: the vendor's own family


def test_no_neutral_declaration_is_a_toolkits_own_operator() -> None:
    own = [op for op in DECLARATIONS.specs if re.match(r"ex[A-Z]", op)]
    assert not own
    assert not DECLARATIONS.layers


def test_the_vendors_layer_types_and_rewrites_come_with_its_declarations() -> None:
    models = VENDOR.declarations
    assert models.layer_types("exSwish") == ("exSwish", "Swish")
    assert models.layer_types("GRU") == ("GRU", "exGRU")
    assert models.layer_types("exGlu") == ("exGlu",)
    assert DECLARATIONS.layer_types("GRU") == ("GRU",)
    # the model-I/O probes' models are built but declare no probing
    assert "FirstConv" in models.specs and "FirstConv" not in models.probing


def test_joining_keeps_both_sides_and_the_right_one_wins_a_clash() -> None:
    relu, tanh = unary("Relu"), unary("Tanh")
    left = Declarations({"a": {"X": relu}}, layers={"X": ("L1",)})
    right = Declarations({"a": {"X": tanh, "Y": relu}, "b": {"Z": relu}}, layers={"X": ("L2",)})
    both = left | right
    assert both.families == {"a": ("X", "Y"), "b": ("Z",)}
    assert both.specs["X"] is tanh
    assert both.layer_types("X") == ("X", "L1", "L2")
    assert both.subjects("X", {}) == left.subjects("X", {})  # both read the same shape
    assert both.with_subject("X", {}, "height", 9)["shape"][2] == 9
