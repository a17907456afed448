"""Horizon J6 as the harness sees it: the ``Vendor`` record (entry point ``horizon``)."""

from __future__ import annotations

from typing import Any

from harness.cases.case import Case
from harness.vendors.base import Vendor
from harness.vendors.horizon import layout, layout_cli

SUITE = "horizon-layout"  # suites/test_horizon_layout.py


def _rule_of(example: dict[str, Any]) -> str:
    """The rule a worked example probes: the W-direction alignment of Y and UV inputs, the
    other inputs' being unaffected by it."""
    return (
        "yuv-w-alignment" if example["kind"] in layout.IMAGE_CHANNELS else "static-input-unaffected"
    )


def example_cases(platform: str) -> list[Case]:
    """One case per worked example of seed 000, on ``platform`` ("all": every J6 platform),
    with the stride the document derives for that platform's alignment."""
    platforms = layout.RULES.targets if platform == "all" else (platform,)
    rules = layout.RULES.data
    return [
        Case(
            id=f"{target}/stride/{name}",
            platform=target,
            op=rules["entry"],
            dtype="uint8",
            limit=f"{rules['entry']}/{_rule_of(example)}",
            value=f"validShape={example['valid_shape']}",
            documented="supported",
            params={**example, "filled": example["filled"][layout.PLATFORM_ALIGNMENT[target]]},
            seed=0,
            source={
                "seed": rules["document"],
                "section": rules["section"],
                "text": example["text"],
            },
            layer_types=(),
        )
        for target in platforms
        for name, example in layout.RULES.examples.items()
    ]


VENDOR = Vendor(
    name="horizon",
    platforms=layout.RULES.targets,
    documents=layout.RULES.document,
    operators=layout.RULES.operators,
    case_sources={SUITE: example_cases},
    documented=layout.RULES.documented,
    commands={"layout": [layout_cli.register]},
    dtypes=("uint8",),
    library_names=(),  # seed 000 names no library or tool of the vendor
)
