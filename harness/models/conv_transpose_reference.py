"""onnx.reference's ConvTranspose, vectorised: the kernel the host reference runs.

onnx.reference (1.18) scatters a transposed convolution's columns back in Python loops
(``col2im``): about 3 s for one 16382-wide, 8-channel case, 85% of the host references of the
whole convolution family. This kernel follows the ONNX operator definition with one matrix
product per kernel position, each added into the strided output positions it reaches; the tests
hold it to onnxruntime and to onnx.reference's own kernel on random shapes, groups, strides,
dilations, pads and output paddings. Anything else (auto_pad other than NOTSET, output_shape,
other ranks) is left to onnx.reference's own kernel.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx.reference.ops.op_conv_transpose import ConvTranspose as _SpecConvTranspose

KERNEL_VERSION = "1"  # part of the reference cache's key: bump when the kernel changes


def conv_transpose_2d(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None,
    *,
    group: int,
    strides: list[int],
    dilations: list[int],
    pads: list[int],
    output_padding: list[int],
) -> np.ndarray:
    """ONNX ConvTranspose of ``x`` (N, C, H, W) with ``w`` (C, M/group, KH, KW): each input
    position adds ``w`` scaled by its value at stride * position + dilation * kernel offset,
    then ``pads`` crop the result ([top, left, bottom, right]) and ``b`` is added."""
    n, channels, height, width = x.shape
    per_group, kernel = w.shape[1], w.shape[2:]
    full = [
        strides[i] * (x.shape[2 + i] - 1) + dilations[i] * (kernel[i] - 1) + 1 + output_padding[i]
        for i in range(2)
    ]
    out = np.zeros((n, per_group * group, *full), dtype=np.float64)
    step = channels // group
    for g in range(group):
        xs = x[:, g * step : (g + 1) * step].astype(np.float64)
        ws = w[g * step : (g + 1) * step].astype(np.float64)
        target = out[:, g * per_group : (g + 1) * per_group]
        for kh in range(kernel[0]):
            for kw in range(kernel[1]):
                top, left = kh * dilations[0], kw * dilations[1]
                rows = slice(top, top + strides[0] * (height - 1) + 1, strides[0])
                cols = slice(left, left + strides[1] * (width - 1) + 1, strides[1])
                target[:, :, rows, cols] += np.einsum("nchw,cm->nmhw", xs, ws[:, :, kh, kw])
    cropped = out[:, :, pads[0] : full[0] - pads[2], pads[1] : full[1] - pads[3]]
    if b is not None:
        cropped = cropped + b.astype(np.float64).reshape(1, -1, 1, 1)
    return cropped.astype(x.dtype)


class ConvTranspose(_SpecConvTranspose):
    def _run(
        self,
        X: np.ndarray,
        W: np.ndarray,
        B: np.ndarray | None = None,
        auto_pad: Any = None,
        dilations: Any = None,
        group: Any = None,
        kernel_shape: Any = None,
        output_padding: Any = None,
        output_shape: Any = None,
        pads: Any = None,
        strides: Any = None,
    ) -> tuple[np.ndarray, ...]:
        plain = X.ndim == 4 and auto_pad in (None, "NOTSET", b"NOTSET") and output_shape is None
        if not plain or (kernel_shape is not None and list(kernel_shape) != list(W.shape[2:])):
            return super()._run(
                X,
                W,
                B,
                auto_pad=auto_pad,
                dilations=dilations,
                group=group,
                kernel_shape=kernel_shape,
                output_padding=output_padding,
                output_shape=output_shape,
                pads=pads,
                strides=strides,
            )
        y = conv_transpose_2d(
            X,
            W,
            B,
            group=int(group or 1),
            strides=list(strides or [1, 1]),
            dilations=list(dilations or [1, 1]),
            pads=list(pads or [0, 0, 0, 0]),
            output_padding=list(output_padding or [0, 0])[:2],
        )
        return (y,)
