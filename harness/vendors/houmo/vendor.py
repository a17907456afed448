"""Houmo TCIM as the harness sees it: the ``Vendor`` record (entry point ``houmo``)."""

from __future__ import annotations

from harness.cases.case import Case
from harness.vendors.base import Vendor
from harness.vendors.houmo import layout, layout_cli

SUITE = "houmo-layout"  # suites/test_houmo_layout.py
# The image formats and shapes the suite checks the split storage rules on (3- to 6-D)
IMAGE_SHAPES = ((3, 220, 220), (2, 3, 64, 100), (1, 2, 3, 8, 30), (1, 1, 2, 3, 4, 6))


def storage_cases(platform: str) -> list[Case]:
    """The worked examples of seed 002 (a (3, 3) int8 array, contiguous and at stride
    (5, 1)), then the split image storage of every format on a few shapes."""
    rules = layout.RULES.data
    source = {"seed": rules["document"], "section": str(rules["section"])}
    entry = rules["entry"]
    cases = [
        Case(
            id=f"TCIM/stride/{name}",
            platform="TCIM",
            op=entry,
            dtype=example["dtype"],
            limit=f"{entry}/{name}-stride",
            value=f"shape={example['shape']}",
            documented="supported",
            params=dict(example),
            seed=0,
            source={**source, "text": example["text"]},
            layer_types=(),
        )
        for name, example in layout.RULES.examples.items()
    ]
    return cases + [
        Case(
            id=f"TCIM/image/{fmt}/{'x'.join(map(str, shape))}",
            platform="TCIM",
            op=entry,
            dtype="uint8",
            limit=f"{entry}/split-stride-array",
            value=f"shape={list(shape)}",
            documented="supported",
            params={"shape": list(shape), "format": fmt},
            seed=0,
            source=source,
            layer_types=(),
        )
        for fmt in layout.YUV_SUBSAMPLING
        for shape in IMAGE_SHAPES
    ]


VENDOR = Vendor(
    name="houmo",
    platforms=layout.RULES.targets,
    documents=layout.RULES.document,
    operators=layout.RULES.operators,
    case_sources={SUITE: storage_cases},
    documented=layout.RULES.documented,
    commands={"layout": [layout_cli.register]},
    dtypes=("uint8",),
    library_names=("tcim_lite",),  # its Python runtime, as seed 002 names it
)
