"""onnx.reference's Conv and ConvTranspose, vectorised: the kernels the host reference runs.

onnx.reference (1.18) lowers a convolution to im2col in Python loops (about 60 ms for one
16383-wide, 8-channel case, most of the convolution family's host references) and scatters a
transposed convolution's columns back likewise (``col2im``: about 3 s for one 16382-wide case).
These kernels follow the ONNX operator definitions with one matrix product per kernel position:
a convolution gathers the strided input positions each kernel offset reads, a transposed one
adds into the strided output positions each offset reaches. The tests hold both to onnxruntime
and to onnx.reference's own kernels on random shapes, groups, strides, dilations, pads and
output paddings. Anything else (auto_pad other than NOTSET, a transposed convolution's
output_shape, other ranks) is left to onnx.reference's own kernels.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from onnx.reference.ops.op_conv_transpose import ConvTranspose as _SpecConvTranspose
from onnx.reference.ops_optimized.op_conv_optimized import Conv as _OptimizedConv

KERNEL_VERSION = "2"  # part of the reference cache's key: bump when a kernel changes


def conv_2d(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None,
    *,
    group: int,
    strides: list[int],
    dilations: list[int],
    pads: list[int],
) -> np.ndarray:
    """ONNX Conv of ``x`` (N, C, H, W) with ``w`` (M, C/group, KH, KW): each output position
    sums its group's input channels at stride * position + dilation * kernel offset in ``x``
    padded by ``pads`` ([top, left, bottom, right]) with zeros, weighted by ``w``; then ``b``
    is added."""
    n = x.shape[0]
    out_channels, per_group, kernel = w.shape[0], w.shape[1], w.shape[2:]
    padded = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    size = [
        (padded.shape[2 + i] - dilations[i] * (kernel[i] - 1) - 1) // strides[i] + 1
        for i in range(2)
    ]
    if min(size) < 1:
        raise ValueError(f"a kernel of {list(kernel)} leaves no output of input {x.shape}")
    each = out_channels // group
    xs = padded.reshape(n, group, per_group, *padded.shape[2:])
    ws = w.astype(np.float64).reshape(group, each, per_group, *kernel)
    out = np.zeros((n, group, each, size[0] * size[1]))
    for kh in range(kernel[0]):
        for kw in range(kernel[1]):
            top, left = kh * dilations[0], kw * dilations[1]
            rows = slice(top, top + strides[0] * (size[0] - 1) + 1, strides[0])
            cols = slice(left, left + strides[1] * (size[1] - 1) + 1, strides[1])
            read = xs[:, :, :, rows, cols].reshape(n, group, per_group, -1)
            out += np.matmul(ws[:, :, :, kh, kw], read)
    out = out.reshape(n, out_channels, *size)
    if b is not None:
        out += b.astype(np.float64).reshape(1, -1, 1, 1)
    return out.astype(x.dtype)


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


def _plain(x: np.ndarray, w: np.ndarray, auto_pad: Any, kernel_shape: Any) -> bool:
    """A 2-D convolution with explicit pads and the weights' own kernel: what these kernels
    compute."""
    explicit = auto_pad in (None, "NOTSET", b"NOTSET")
    own_kernel = kernel_shape is None or list(kernel_shape) == list(w.shape[2:])
    return x.ndim == 4 and explicit and own_kernel


class Conv(_OptimizedConv):
    def _run(
        self,
        X: np.ndarray,
        W: np.ndarray,
        B: np.ndarray | None = None,
        auto_pad: Any = None,
        dilations: Any = None,
        group: Any = None,
        kernel_shape: Any = None,
        pads: Any = None,
        strides: Any = None,
    ) -> tuple[np.ndarray, ...]:
        if not _plain(X, W, auto_pad, kernel_shape):
            return super()._run(
                X,
                W,
                B,
                auto_pad=auto_pad,
                dilations=dilations,
                group=group,
                kernel_shape=kernel_shape,
                pads=pads,
                strides=strides,
            )
        y = conv_2d(
            X,
            W,
            B,
            group=int(group or 1),
            strides=list(strides or [1, 1]),
            dilations=list(dilations or [1, 1]),
            pads=list(pads or [0, 0, 0, 0]),
        )
        return (y,)


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
        if not _plain(X, W, auto_pad, kernel_shape) or output_shape is not None:
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
