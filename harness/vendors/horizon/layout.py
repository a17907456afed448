"""Horizon J6 input strides (seed 000): fill the dynamic (-1) entries of validShape and stride.

Strides are in bytes. ``-1`` entries are filled from the last dimension backwards:
``stride[i] = stride[i+1] * validShape[i+1]`` (the innermost one is the element size). For Y and
UV inputs (NHWC, C = 1 or 2) the seed aligns the strides above the W dimension, stride[1] (the
row) and stride[0] (the batch), to 32 bytes on J6E/M/B and 64 bytes on J6H/P and S6P; a row of
batch n starts at ``n * stride[0] + h * stride[1]``, so both must be aligned, and given (non -1)
strides of those dimensions are checked for it too. Other inputs keep their given strides; their
-1 strides get the compact value with no alignment (the seed's only non-image input is static,
so it says nothing about this case).

``kind="auto"`` infers Y for a 4-D input with last dimension 1 and UV for last dimension 2 when
its stride has -1 entries (the seed's dynamic Y and UV inputs); anything else is "other". Pass
``kind="y"`` or ``"uv"`` to have a static image input's alignment checked.

The buffer holding an input is ``stride[0] * validShape[0]`` bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import DTypeLike

from harness.layout.align import align_up
from harness.layout.errors import LayoutError
from harness.layout.strided import StridedTensor, check_rank, check_shape, check_strides
from harness.vendors.rules import load_rules

RULES = load_rules(Path(__file__).with_name("data") / "stride-rules.yaml")
RULE_IDS = tuple(rule["id"] for rule in RULES.data["rules"])  # in the document's order
# W-direction alignment (bytes) of Y and UV input strides, per platform (seed 000).
PLATFORM_ALIGNMENT: dict[str, int] = {t: RULES.constants(t)["alignment"] for t in RULES.targets}
DYNAMIC = -1
KINDS = ("auto", "y", "uv", "other")
# Channel count (last NHWC dimension) of each image input kind.
IMAGE_CHANNELS = {"y": 1, "uv": 2}
IMAGE_RANK = 4


@dataclass(frozen=True)
class HorizonLayout:
    """A filled-in input: ``alignment`` is the platform's Y/UV alignment (applied if image kind)."""

    platform: str
    kind: str
    alignment: int
    tensor: StridedTensor

    @property
    def valid_shape(self) -> tuple[int, ...]:
        return self.tensor.shape

    @property
    def stride(self) -> tuple[int, ...]:
        return self.tensor.stride

    @property
    def buffer_size(self) -> int:
        """``stride[0] * validShape[0]`` bytes."""
        return self.tensor.size


def platform_alignment(platform: str) -> int:
    """The Y/UV stride alignment in bytes of a J6 platform name such as ``J6E``."""
    try:
        return PLATFORM_ALIGNMENT[platform.upper()]
    except KeyError:
        known = ", ".join(PLATFORM_ALIGNMENT)
        raise LayoutError(f"platform {platform!r} is not one of {known}") from None


def resolve_valid_shape(model_shape: Sequence[int], actual_shape: Sequence[int]) -> tuple[int, ...]:
    """The actual validShape, checked against the model's (whose -1 entries are dynamic)."""
    actual = check_shape(actual_shape, "validShape")
    if len(model_shape) != len(actual):
        raise LayoutError(
            f"actual validShape {list(actual)} has {len(actual)} dimensions but the model's "
            f"validShape {list(model_shape)} has {len(model_shape)}"
        )
    for i, (model, real) in enumerate(zip(model_shape, actual, strict=True)):
        if model != DYNAMIC and model <= 0:
            raise LayoutError(f"model validShape[{i}] = {model}: must be >= 1 or -1 (dynamic)")
        if model not in (DYNAMIC, real):
            raise LayoutError(
                f"validShape[{i}]: the model fixes {model} but the actual input has {real}"
            )
    return actual


def infer_kind(valid_shape: Sequence[int], stride: Sequence[int]) -> str:
    """``y`` or ``uv`` for a dynamic 4-D NHWC input with C = 1 or 2, else ``other``."""
    if len(valid_shape) == IMAGE_RANK and DYNAMIC in stride:
        for kind, channels in IMAGE_CHANNELS.items():
            if valid_shape[-1] == channels:
                return kind
    return "other"


def _check_image_input(kind: str, shape: Sequence[int]) -> None:
    if len(shape) != IMAGE_RANK or shape[-1] != IMAGE_CHANNELS[kind]:
        raise LayoutError(
            f"a {kind.upper()} input has validShape [N,H,W,{IMAGE_CHANNELS[kind]}]; "
            f"got {list(shape)}"
        )


def fill(
    platform: str,
    valid_shape: Sequence[int],
    stride: Sequence[int],
    *,
    model_valid_shape: Sequence[int] | None = None,
    kind: str = "auto",
    dtype: DTypeLike = np.uint8,
) -> HorizonLayout:
    """Fill -1 strides for the actual ``valid_shape`` and check every stride rule of seed 000."""
    alignment = platform_alignment(platform)
    shape = (
        check_shape(valid_shape, "validShape")
        if model_valid_shape is None
        else resolve_valid_shape(model_valid_shape, valid_shape)
    )
    check_rank(shape, stride, "validShape")
    for i, value in enumerate(stride):
        if value != DYNAMIC and value <= 0:
            raise LayoutError(f"stride[{i}] = {value}: must be >= 1 or -1 (dynamic)")
    if kind not in KINDS:
        raise LayoutError(f"input kind {kind!r} is not one of {', '.join(KINDS)}")
    if kind == "auto":
        kind = infer_kind(shape, stride)
    if kind in IMAGE_CHANNELS:
        _check_image_input(kind, shape)
    # Dimensions above W (N and H of NHWC) carry the W-direction alignment.
    aligned = range(len(shape) - 2) if kind in IMAGE_CHANNELS else range(0)
    itemsize = np.dtype(dtype).itemsize
    filled = list(stride)
    for i in reversed(range(len(shape))):
        if filled[i] == DYNAMIC:
            compact = itemsize if i == len(shape) - 1 else filled[i + 1] * shape[i + 1]
            filled[i] = align_up(compact, alignment) if i in aligned else compact
    for i in aligned:
        if filled[i] % alignment:
            raise LayoutError(
                f"stride[{i}] = {filled[i]} of a {kind.upper()} input is not a multiple of "
                f"{alignment} bytes, the {platform.upper()} alignment"
            )
    check_strides(shape, filled, itemsize, "validShape")
    tensor = StridedTensor(shape, tuple(filled), np.dtype(dtype))
    return HorizonLayout(platform.upper(), kind, alignment, tensor)
