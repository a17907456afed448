"""onnx.reference's MaxPool and AveragePool, vectorised: the kernels the host reference runs.

onnx.reference (1.18) pools in pure Python, one window at a time, which made pooling-heavy
operator families several times slower than the toolkit itself, and its MaxPool reads a 2-D
``pads`` as [top, bottom, left, right] where ONNX writes [top, left, bottom, right] (with unit
strides and dilations): a pad on one side only pools the wrong rows. These kernels follow the
ONNX operator definitions as onnxruntime does, with numpy's window views; the tests hold them
to onnxruntime on random shapes, pads, strides, dilations and ceil modes, and to onnx.reference
where its reading is right. Anything else (auto_pad other than NOTSET, other ranks, MaxPool's
Indices output) is left to onnx.reference's own kernel.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from onnx.reference.ops.op_average_pool import AveragePool_19
from onnx.reference.ops.op_max_pool import MaxPool as _SpecMaxPool

KERNELS_VERSION = "1"  # part of the reference cache's key: bump when a kernel changes


def _output_size(size: int, begin: int, end: int, span: int, stride: int, ceil: bool) -> int:
    """One spatial output size; with ``ceil_mode`` a last window that would start in the end
    padding is dropped, as ONNX and onnxruntime do."""
    fraction = (size + begin + end - span) / stride + 1
    count = math.ceil(fraction) if ceil else math.floor(fraction)
    if ceil and (count - 1) * stride >= size + begin:
        count -= 1
    return count


def _windows(
    x: np.ndarray,
    kernel: list[int],
    strides: list[int],
    dilations: list[int],
    pads: list[int],
    ceil: bool,
    fill: float,
    overhang: float,
) -> np.ndarray:
    """The pooling windows of ``x`` (N, C, H, W): a view (N, C, OH, OW, KH, KW); ``fill``
    stands in the pads, ``overhang`` past them (a ceil-mode window reaching beyond)."""
    spans = [(k - 1) * d + 1 for k, d in zip(kernel, dilations, strict=True)]
    sizes = [
        _output_size(x.shape[2 + i], pads[i], pads[i + 2], spans[i], strides[i], ceil)
        for i in range(2)
    ]
    beyond = [
        max(0, (sizes[i] - 1) * strides[i] + spans[i] - (x.shape[2 + i] + pads[i] + pads[i + 2]))
        for i in range(2)
    ]
    padded = np.pad(
        x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])), constant_values=fill
    )
    padded = np.pad(
        padded, ((0, 0), (0, 0), (0, beyond[0]), (0, beyond[1])), constant_values=overhang
    )
    # numpy 2.3's stubs type axis as one index; it takes a tuple of them at run time
    view = sliding_window_view(padded, spans, axis=(2, 3))  # type: ignore[call-overload]
    view = view[:, :, :: strides[0], :: strides[1], :: dilations[0], :: dilations[1]]
    return view[:, :, : sizes[0], : sizes[1]]


def _plain(x: np.ndarray, auto_pad: Any, outputs: int) -> bool:
    """Whether the vectorised kernel computes this node: 4-D data, explicit pads, one output."""
    return x.ndim == 4 and auto_pad in (None, "NOTSET", b"NOTSET") and outputs == 1


def _settings(
    kernel_shape: Any, strides: Any, dilations: Any, pads: Any
) -> tuple[list[int], list[int], list[int], list[int]]:
    kernel = list(kernel_shape)
    return (
        kernel,
        list(strides or [1, 1]),
        list(dilations or [1, 1]),
        list(pads or [0, 0, 0, 0]),
    )


class MaxPool(_SpecMaxPool):
    def _run(  # type: ignore[override]
        self,
        x: np.ndarray,
        auto_pad: Any = None,
        ceil_mode: Any = None,
        dilations: Any = None,
        kernel_shape: Any = None,
        pads: Any = None,
        storage_order: Any = None,
        strides: Any = None,
    ) -> tuple[np.ndarray, ...]:
        if not _plain(x, auto_pad, len(list(self.output))):
            return super()._run(
                x,
                auto_pad=auto_pad,
                ceil_mode=ceil_mode,
                dilations=dilations,
                kernel_shape=kernel_shape,
                pads=pads,
                storage_order=storage_order,
                strides=strides,
            )
        kernel, step, dilation, pad = _settings(kernel_shape, strides, dilations, pads)
        view = _windows(x, kernel, step, dilation, pad, bool(ceil_mode), -np.inf, -np.inf)
        return (view.max(axis=(-2, -1)).astype(x.dtype),)


class AveragePool(AveragePool_19):
    def _run(  # type: ignore[override]
        self,
        x: np.ndarray,
        auto_pad: Any = None,
        ceil_mode: Any = None,
        dilations: Any = None,
        kernel_shape: Any = None,
        pads: Any = None,
        strides: Any = None,
        count_include_pad: Any = None,
    ) -> tuple[np.ndarray, ...]:
        if not _plain(x, auto_pad, len(list(self.output))):
            return super()._run(
                x,
                auto_pad=auto_pad,
                ceil_mode=ceil_mode,
                dilations=dilations,
                kernel_shape=kernel_shape,
                pads=pads,
                strides=strides,
                count_include_pad=count_include_pad,
            )
        kernel, step, dilation, pad = _settings(kernel_shape, strides, dilations, pads)
        ceil = bool(ceil_mode)
        sums = _windows(x.astype(np.float64), kernel, step, dilation, pad, ceil, 0.0, 0.0)
        # the divisor: the window's elements inside the data (and the pads, when counted),
        # never those past the pads
        ones = np.ones((1, 1, *x.shape[2:]))
        inside = 1.0 if count_include_pad else 0.0
        counts = _windows(ones, kernel, step, dilation, pad, ceil, inside, 0.0)
        total = sums.sum(axis=(-2, -1)) / counts.sum(axis=(-2, -1))
        return (total.astype(x.dtype),)


POOLING_KERNELS = [MaxPool, AveragePool]
