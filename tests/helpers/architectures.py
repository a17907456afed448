"""Real architectures as ONNX, built here from their published layer definitions with seeded
random weights (nothing downloaded): ResNet-18 (torchvision's ``resnet18``), MobileNetV2
(torchvision's ``mobilenet_v2``, width 1.0) and a YOLO-style detector (YOLOv5n's backbone, PAN
neck and three raw detection heads, as Rockchip's model zoo exports it: no box decoding).

Each graph is what PyTorch's exporter writes at opset 13 with constant folding off: Conv
without bias followed by BatchNormalization, ReLU6 as Clip with min/max inputs, SiLU as
Sigmoid and Mul, ``AdaptiveAvgPool2d(1)`` as GlobalAveragePool, Linear after Flatten as Gemm
(transB=1), nearest upsampling as Resize with scales. The input is 1x3x32x32: the smallest
at which every stride-2 layer of these 32x-downsampling networks halves its input (the last
stage is 1x1; the detector's upsampled maps meet their 2x2 and 4x4 skips).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13
IR_VERSION = 7  # what PyTorch writes at opset 13
INPUT = "input"
SIDE = 32
SHAPE = [1, 3, SIDE, SIDE]


class _Graph:
    """Nodes and seeded weights as a network's layers add them; tensors named in order."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.weights: list[onnx.TensorProto] = []
        self._count = 0

    def _name(self, op: str) -> str:
        self._count += 1
        return f"{op.lower()}_{self._count}"

    def node(self, op: str, inputs: list[str], **attrs: Any) -> str:
        name = self._name(op)
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def constant(self, array: np.ndarray) -> str:
        name = self._name("w")
        self.weights.append(numpy_helper.from_array(array, name))
        return name

    def conv(self, x: str, cin: int, cout: int, k: int, stride: int = 1, groups: int = 1) -> str:
        """A bias-free Conv with He-initialised weights (torchvision's kaiming_normal_,
        fan_out), padded to keep the size at stride 1."""
        fan_out = cout * k * k // groups
        shape = (cout, cin // groups, k, k)
        w = self.rng.normal(0.0, np.sqrt(2.0 / fan_out), shape).astype(np.float32)
        pad = (k - 1) // 2
        return self.node(
            "Conv",
            [x, self.constant(w)],
            kernel_shape=[k, k],
            strides=[stride, stride],
            pads=[pad] * 4,
            group=groups,
            dilations=[1, 1],
        )

    def batch_norm(self, x: str, channels: int) -> str:
        """BatchNormalization with seeded statistics, as a trained network carries them."""
        scale = self.rng.uniform(0.5, 1.5, channels).astype(np.float32)
        bias = self.rng.normal(0.0, 0.1, channels).astype(np.float32)
        mean = self.rng.normal(0.0, 0.1, channels).astype(np.float32)
        var = self.rng.uniform(0.5, 1.5, channels).astype(np.float32)
        params = [self.constant(array) for array in (scale, bias, mean, var)]
        return self.node("BatchNormalization", [x, *params], epsilon=1e-5, momentum=0.9)

    def conv_bn(self, x: str, cin: int, cout: int, k: int, stride: int = 1, groups: int = 1) -> str:
        return self.batch_norm(self.conv(x, cin, cout, k, stride, groups), cout)

    def relu6(self, x: str) -> str:
        low = self.constant(np.array(0.0, np.float32))
        high = self.constant(np.array(6.0, np.float32))
        return self.node("Clip", [x, low, high])

    def silu(self, x: str) -> str:
        return self.node("Mul", [x, self.node("Sigmoid", [x])])

    def classifier(self, x: str, features: int, classes: int = 1000) -> str:
        """GlobalAveragePool, Flatten and the fully connected layer (torch's Linear init)."""
        flat = self.node("Flatten", [self.node("GlobalAveragePool", [x])], axis=1)
        bound = 1.0 / np.sqrt(features)
        w = self.rng.uniform(-bound, bound, (classes, features)).astype(np.float32)
        b = self.rng.uniform(-bound, bound, classes).astype(np.float32)
        return self.node("Gemm", [flat, self.constant(w), self.constant(b)], transB=1)

    def model(self, name: str, outputs: list[str]) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes,
            name,
            [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, SHAPE)],
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, None) for out in outputs],
            self.weights,
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = IR_VERSION
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        onnx.checker.check_model(model, full_check=True)
        return model


def resnet18(seed: int = 0) -> onnx.ModelProto:
    """torchvision's ResNet-18: a 7x7 stem and max pool, four stages of two BasicBlocks
    (64, 128, 256, 512 channels; a 1x1 Conv + BN shortcut where a stage halves), the classifier."""
    g = _Graph(seed)
    x = g.node("Relu", [g.conv_bn(INPUT, 3, 64, 7, stride=2)])
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = 64
    for width, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        for block in range(2):
            step = stride if block == 0 else 1
            out = g.node("Relu", [g.conv_bn(x, channels, width, 3, step)])
            out = g.conv_bn(out, width, width, 3)
            shortcut = g.conv_bn(x, channels, width, 1, step) if step != 1 else x
            x = g.node("Relu", [g.node("Add", [out, shortcut])])
            channels = width
    return g.model("resnet18", [g.classifier(x, 512)])


# MobileNetV2's inverted residual settings: expansion t, channels c, repeats n, first stride s
_MOBILENET_V2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1)]
_MOBILENET_V2 += [(6, 160, 3, 2), (6, 320, 1, 1)]


def mobilenet_v2(seed: int = 0) -> onnx.ModelProto:
    """torchvision's MobileNetV2 (width 1.0): a 3x3 stem, the 17 inverted residual blocks
    (1x1 expansion, 3x3 depthwise, linear 1x1 projection; a residual Add where shapes
    match), the 1x1 Conv to 1280 and the classifier (its Dropout is gone in an export)."""
    g = _Graph(seed)
    x = g.relu6(g.conv_bn(INPUT, 3, 32, 3, stride=2))
    channels = 32
    for t, c, n, s in _MOBILENET_V2:
        for repeat in range(n):
            stride = s if repeat == 0 else 1
            hidden = channels * t
            out = g.relu6(g.conv_bn(x, channels, hidden, 1)) if t != 1 else x
            out = g.relu6(g.conv_bn(out, hidden, hidden, 3, stride, groups=hidden))
            out = g.conv_bn(out, hidden, c, 1)
            x = g.node("Add", [x, out]) if stride == 1 and channels == c else out
            channels = c
    x = g.relu6(g.conv_bn(x, channels, 1280, 1))
    return g.model("mobilenet_v2", [g.classifier(x, 1280)])


def _yolo_conv(g: _Graph, x: str, cin: int, cout: int, k: int, stride: int = 1) -> str:
    """YOLOv5's Conv: Conv, BatchNormalization, SiLU."""
    return g.silu(g.conv_bn(x, cin, cout, k, stride))


def _c3(g: _Graph, x: str, cin: int, cout: int, repeats: int, shortcut: bool = True) -> str:
    """YOLOv5's C3: two 1x1 branches, one through ``repeats`` bottlenecks (1x1, 3x3, an Add
    when ``shortcut``), concatenated and fused by a 1x1 Conv."""
    hidden = cout // 2
    a = _yolo_conv(g, x, cin, hidden, 1)
    for _ in range(repeats):
        b = _yolo_conv(g, _yolo_conv(g, a, hidden, hidden, 1), hidden, hidden, 3)
        a = g.node("Add", [a, b]) if shortcut else b
    side = _yolo_conv(g, x, cin, hidden, 1)
    return _yolo_conv(g, g.node("Concat", [a, side], axis=1), 2 * hidden, cout, 1)


def _sppf(g: _Graph, x: str, channels: int) -> str:
    """YOLOv5's SPPF: a 1x1 Conv, three chained 5x5 max pools, all four concatenated, a 1x1."""
    hidden = channels // 2
    pooled = [_yolo_conv(g, x, channels, hidden, 1)]
    for _ in range(3):
        pooled.append(
            g.node("MaxPool", [pooled[-1]], kernel_shape=[5, 5], strides=[1, 1], pads=[2] * 4)
        )
    return _yolo_conv(g, g.node("Concat", pooled, axis=1), 4 * hidden, channels, 1)


def _upsample(g: _Graph, x: str) -> str:
    """``nn.Upsample(scale_factor=2, mode="nearest")`` as exported: Resize with scales."""
    scales = g.constant(np.array([1.0, 1.0, 2.0, 2.0], np.float32))
    roi = g.constant(np.array([], np.float32))
    return g.node(
        "Resize",
        [x, roi, scales],
        mode="nearest",
        coordinate_transformation_mode="asymmetric",
        nearest_mode="floor",
    )


def yolo_detector(seed: int = 0, classes: int = 80, anchors: int = 3) -> onnx.ModelProto:
    """YOLOv5n (depth 0.33, width 0.25): the backbone to SPPF, the PAN neck, and a 1x1 head
    of ``anchors * (classes + 5)`` channels on each of the stride 8, 16 and 32 maps."""
    g = _Graph(seed)
    x = _yolo_conv(g, INPUT, 3, 16, 6, stride=2)  # the stem's 6x6 Conv, padding 2
    x = _c3(g, _yolo_conv(g, x, 16, 32, 3, 2), 32, 32, 1)
    p3 = _c3(g, _yolo_conv(g, x, 32, 64, 3, 2), 64, 64, 2)
    p4 = _c3(g, _yolo_conv(g, p3, 64, 128, 3, 2), 128, 128, 3)
    p5 = _sppf(g, _c3(g, _yolo_conv(g, p4, 128, 256, 3, 2), 256, 256, 1), 256)
    top = _yolo_conv(g, p5, 256, 128, 1)
    mid = _c3(g, g.node("Concat", [_upsample(g, top), p4], axis=1), 256, 128, 1, shortcut=False)
    lateral = _yolo_conv(g, mid, 128, 64, 1)
    small = _c3(g, g.node("Concat", [_upsample(g, lateral), p3], axis=1), 128, 64, 1, False)
    down = g.node("Concat", [_yolo_conv(g, small, 64, 64, 3, 2), lateral], axis=1)
    medium = _c3(g, down, 128, 128, 1, shortcut=False)
    down = g.node("Concat", [_yolo_conv(g, medium, 128, 128, 3, 2), top], axis=1)
    large = _c3(g, down, 256, 256, 1, shortcut=False)
    heads = []
    for feature, channels in ((small, 64), (medium, 128), (large, 256)):
        w = g.rng.normal(0.0, 0.01, (anchors * (classes + 5), channels, 1, 1)).astype(np.float32)
        b = g.rng.normal(0.0, 0.01, anchors * (classes + 5)).astype(np.float32)
        heads.append(g.node("Conv", [feature, g.constant(w), g.constant(b)], kernel_shape=[1, 1]))
    return g.model("yolo_detector", heads)


ARCHITECTURES: dict[str, Callable[[], onnx.ModelProto]] = {
    "resnet18": resnet18,
    "mobilenet_v2": mobilenet_v2,
    "yolo_detector": yolo_detector,
}
