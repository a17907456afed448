"""The RK3562 operator catalogue against seed 001: counts, spot checks and loader errors.

Expected values come from the seed text (scanned mechanically, or read by hand and written
down here), never from the YAML under test.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from tests.helpers import paths

from harness.documented.limits import LIMIT_KINDS, Limit
from harness.documented.operators import (
    SCHEMA_PATH,
    OperatorCatalogue,
    Tolerance,
    load_operators,
)
from harness.safe_yaml import DataFileError, load_yaml
from harness.vendors.rknn.documents.operators import SEED_PATH, seed_catalogue
from harness.vendors.rknn.platforms import PLATFORMS

SEED = next((paths.ROOT / "docs" / "seeds").glob("001_*.txt"))
SEED_LINES = SEED.read_text(encoding="utf-8").splitlines()
# The fifteen section headings of the seed, in order.
OPERATORS = (
    "Div", "Expand", "GRU", "Gather", "Hardmax", "LSTM", "Max", "Mul", "MulRelu", "Pad",
    "MaxPool", "GlobalMaxPool", "AveragePool", "GlobalAveragePool", "Pow",
)  # fmt: skip
SUBSECTIONS = (
    "Inputs",
    "Outputs",
    "Data Type Constraints",
    "Attributes",
    "Broadcasting constraints",
    "Other Support",
)


@pytest.fixture(scope="module")
def catalogue() -> OperatorCatalogue:
    return seed_catalogue()


@pytest.fixture(scope="module")
def limits(catalogue: OperatorCatalogue) -> dict[str, Limit]:
    return {limit.id: limit for limit in catalogue.limits()}


def _bare(line: str) -> str:
    """A seed line without indentation and bullet."""
    return line.strip().removeprefix("• ").strip()


# --- the independent counts -----------------------------------------------------------------

# Seed phrasing -> limit kind. A line may hold several limits ("batchsize∈(0,8192], when
# greater than 1, only multiples of 4": a range and a multiple-of rule). Each numeric
# interval counts once; "projsize∈[0,hiddensize]" is symbolic and overridden by "Currently
# limited to 0", so it is not one. Recommendations ("no limitation, 4-alignment
# recommended") and "constantNo limitation" are not limits.
_INTERVAL = re.compile(r"∈\s*[\[(]\s*-?\d+\s*,\s*-?\d+\s*[\])]")
_PER_LINE = (
    (re.compile(r"only multiples of \d+"), "multiple-of"),
    (re.compile(r":\s*\d+\s*or\s*\d+$"), "values"),  # numdirections:1or2
    (re.compile(r"∈\{"), "values"),  # axis∈{0,1,2,3}
    (re.compile(r"^Currently only .* are supported$"), "values"),  # Pow exponents
    (re.compile(r"only \w+ is supported"), "values"),  # auto_pad
    (re.compile(r"^Supported modes:"), "values"),  # Pad mode
    (re.compile(r"^The axis for \w+:"), "values"),  # Hardmax axis
    (re.compile(r"1\(T\) or 0\(F\)$"), "values"),  # linear_before_reset
    (re.compile(r"^Specifies the computation direction"), "values"),  # direction
    (re.compile(r"(?i)currently limited to \d+"), "fixed"),
    (re.compile(r": not supported$"), "unsupported"),
    (re.compile(r"^Specifies the layout consistent"), "layout"),
    (re.compile(r"\w+∗\w+<\d+"), "product"),
    (re.compile(r"rank = \d+"), "rank"),
    (re.compile(r"^Quantization support$"), "quantization"),
    (re.compile(r"^Broadcasting support$"), "broadcast-support"),
    (re.compile(r"^Multi-core:"), "multi-core"),
)
_ATTRIBUTE_VALUE = re.compile(r":\s*-?\d+$")  # "...in computation: 1", "storage mode: 0"
_SAME_AS = re.compile(r"^Same as (\w+)$")
# A tensor role's header: "• A:T1,T2", "• sequence_lens:T3(optional)",
# "• constant_value(optional):T3".
_ROLE = re.compile(
    r"^• (?P<name>\w+)(?P<opt1>\(optional\))?:(?P<types>T\d+(?:,T\d+)*)(?P<opt2>\(optional\))?$"
)


def _kinds(line: str, section: str) -> list[str]:
    """The limit kinds one (bare) seed line states."""
    if section == "Data Type Constraints":
        return ["dtype"] if re.match(r"T\d+:", line) else []
    interval = "broadcast" if section == "Broadcasting constraints" else "range"
    kinds = [interval] * len(_INTERVAL.findall(line))
    kinds += [kind for pattern, kind in _PER_LINE if pattern.search(line)]
    if section == "Attributes" and _ATTRIBUTE_VALUE.search(line):
        kinds.append("values")
    return kinds


def _scan_seed() -> Counter[tuple[str, str, str]]:
    """Count documented limits per (operator, place, kind) from the seed's wording alone.

    The place is the tensor role under Inputs/Outputs, otherwise the subsection's heading.
    """
    counts: Counter[tuple[str, str, str]] = Counter()
    section_of: dict[tuple[str, str], str] = {}  # (op, place) -> subsection
    same_as: list[tuple[str, str, str]] = []  # (op, subsection, other op)
    op = section = place = ""
    for raw in SEED_LINES:
        line = _bare(raw)
        if line in OPERATORS and not raw.startswith(("•", " ")):
            op, section = line, ""
        elif line in SUBSECTIONS:
            section = place = line
        elif op and section:
            if section in ("Inputs", "Outputs") and (role := _ROLE.match(raw)):
                place = role["name"]
            section_of[(op, place)] = section
            if match := _SAME_AS.match(line):
                same_as.append((op, section, match[1]))
            for kind in _kinds(line, section):
                counts[(op, place, kind)] += 1
    # "Same as Mul" under Inputs/Outputs: Mul's tensors there, plus (once) the type
    # variables they use when the operator lists none of its own.
    own_dtypes = {o for (o, _), s in section_of.items() if s == "Data Type Constraints"}
    copies = {(op, section, other) for op, section, other in same_as}
    copies |= {(op, "Data Type Constraints", other) for op, _, other in same_as}
    for op, section, other in copies:
        if section == "Data Type Constraints" and op in own_dtypes:
            continue
        for (o, place, kind), n in list(counts.items()):
            if o == other and section_of[(o, place)] == section:
                counts[(op, place, kind)] += n
    return counts


def _seed_roles() -> dict[str, list[tuple[object, ...]]]:
    """Per operator, its tensor roles as the seed lists them:
    (subsection, name, types, optional, shape or None)."""
    roles: dict[str, list[tuple[object, ...]]] = {}
    op = section = ""
    shapes: dict[tuple[str, int], str] = {}  # (op, role index) -> shape line
    for raw in SEED_LINES:
        line = _bare(raw)
        if line in OPERATORS and not raw.startswith(("•", " ")):
            op = line
        elif line in SUBSECTIONS:
            section = line
        elif section in ("Inputs", "Outputs") and (role := _ROLE.match(raw)):
            optional = bool(role["opt1"] or role["opt2"])
            types = tuple(role["types"].split(","))
            roles.setdefault(op, []).append((section, role["name"], types, optional))
        elif section in ("Inputs", "Outputs") and (shape := re.match(r"shape\s*:\s*(.*)$", line)):
            shapes[(op, len(roles[op]) - 1)] = shape[1]
    return {
        op: [(*row, shapes.get((op, i))) for i, row in enumerate(rows)]
        for op, rows in roles.items()
    }


# Counted by hand from the seed, one operator section at a time: one limit per interval, per
# multiple-of rule, per value list, per "currently limited to"/"not supported" statement, per
# product rule, per rank, per "Data Type Constraints" line, per "Quantization support" and
# "Broadcasting support" block, per layout attribute, per stated multi-core line; a limit
# repeated in several tensor roles counts once per role. E.g. GRU ranges: X 3, W 2, R 1, B 1,
# sequence_lens 1, initial_h 2, Y 3, Y_h 2 = 15; GRU values: numdirections in W, R, B,
# initial_h, Y, Y_h = 6, plus linear_before_reset and direction = 8. MulRelu ("Same as Mul")
# carries Mul's 7 plus its own multi-core line. MaxPool values: auto_pad, count_include_pad,
# storage_order; the other pools have no storage_order.
_POOL = {"range": 11, "values": 2, "unsupported": 1, "dtype": 3}
HAND_COUNT: dict[str, dict[str, int]] = {
    "Div": {"quantization": 3, "broadcast-support": 2, "dtype": 2},
    "Expand": {"quantization": 2, "dtype": 1, "broadcast": 6},
    "GRU": {
        "range": 15,
        "multiple-of": 5,
        "values": 8,
        "quantization": 7,
        "dtype": 3,
        "layout": 2,
        "multi-core": 1,
    },
    "Gather": {"quantization": 2, "rank": 1, "dtype": 2, "values": 1, "multi-core": 1},
    "Hardmax": {"product": 2, "dtype": 1, "values": 1, "multi-core": 1},
    "LSTM": {
        "range": 19,
        "multiple-of": 7,
        "values": 9,
        "quantization": 9,
        "dtype": 4,
        "fixed": 3,
        "layout": 2,
        "multi-core": 1,
    },
    "Max": {"quantization": 3, "broadcast-support": 2, "dtype": 1, "multi-core": 1},
    "Mul": {"quantization": 3, "broadcast-support": 2, "dtype": 2},
    "MulRelu": {"quantization": 3, "broadcast-support": 2, "dtype": 2, "multi-core": 1},
    "Pad": {"quantization": 3, "dtype": 3, "values": 1, "range": 3, "multi-core": 1},
    "MaxPool": {**_POOL, "values": 3},
    "GlobalMaxPool": _POOL,
    "AveragePool": _POOL,
    "GlobalAveragePool": _POOL,
    "Pow": {"quantization": 2, "values": 1, "dtype": 2, "multi-core": 1},
}
DOCUMENTED_LIMITS = 231  # sum of HAND_COUNT


def _counted(catalogue: OperatorCatalogue) -> Counter[tuple[str, str]]:
    return Counter((limit.op, limit.kind) for limit in catalogue.limits())


def test_catalogue_count_matches_mechanical_scan_of_seed(catalogue: OperatorCatalogue) -> None:
    scanned: Counter[tuple[str, str]] = Counter()
    for (op, _, kind), n in _scan_seed().items():
        scanned[(op, kind)] += n
    assert _counted(catalogue) == +scanned


def test_role_limits_sit_on_the_roles_the_seed_lists_them_under(
    catalogue: OperatorCatalogue,
) -> None:
    def written_under_role(limit: Limit) -> bool:
        # Pad's reflect ranges are written under Attributes (mode); the catalogue files them
        # under the tensor they constrain, so the scan cannot place them on a role.
        attributes = catalogue.operators[limit.op].attributes
        by_value = any(attributes[name].per_value for name in limit.condition)
        return limit.role not in ("attr", "dtype", "broadcast", "op") and not by_value

    on_roles = Counter(
        (limit.op, limit.role, limit.kind)
        for limit in catalogue.limits()
        if written_under_role(limit)
    )
    scanned = Counter({k: n for k, n in _scan_seed().items() if k[1] not in SUBSECTIONS})
    assert on_roles == +scanned


def test_roles_types_and_shapes_as_listed(catalogue: OperatorCatalogue) -> None:
    seed = _seed_roles()
    seed["MulRelu"] = seed["Mul"]  # "Same as Mul"
    for name, op in catalogue.operators.items():
        listed = [
            (
                "Inputs" if r.direction == "input" else "Outputs",
                r.name,
                r.types,
                r.optional,
                r.shape,
            )
            for r in op.roles
        ]
        assert listed == seed[name], name


def test_catalogue_count_matches_hand_count(catalogue: OperatorCatalogue) -> None:
    hand = Counter({(op, kind): n for op, kinds in HAND_COUNT.items() for kind, n in kinds.items()})
    assert _counted(catalogue) == hand
    assert sum(hand.values()) == len(catalogue.limits()) == DOCUMENTED_LIMITS


# --- structure and traceability ---------------------------------------------------------------


def test_all_fifteen_operators_in_seed_order(catalogue: OperatorCatalogue) -> None:
    headings = [line for line in SEED_LINES if line in OPERATORS]
    assert list(catalogue.operators) == headings == list(OPERATORS)


def test_header_names_the_seed(catalogue: OperatorCatalogue) -> None:
    assert (catalogue.sdk, catalogue.platform) == ("rknn2-2.5.0", "rk3562")
    assert catalogue.source.file == SEED.name
    assert catalogue.source.title == SEED_LINES[0]
    assert f"Source pages: {catalogue.source.pages}." in SEED_LINES


def test_limit_ids_unique_and_kinds_closed(catalogue: OperatorCatalogue) -> None:
    ids = [limit.id for limit in catalogue.limits()]
    assert len(ids) == len(set(ids))
    for limit in catalogue.limits():
        assert limit.kind in LIMIT_KINDS
        assert limit.id.startswith(f"{limit.op}/{limit.role}/")
        assert limit.source.startswith(f"{SEED.name} § {limit.op}")


def test_every_limit_text_is_a_seed_line(catalogue: OperatorCatalogue) -> None:
    seed = {_bare(line) for line in SEED_LINES}
    for limit in catalogue.limits():
        for line in limit.text.split("\n"):
            assert line in seed, (limit.id, line)


def test_limit_bounds_and_values_are_those_of_their_line(catalogue: OperatorCatalogue) -> None:
    """Each interval sits next to its own dimension's name; each value is written in the line."""
    for limit in catalogue.limits():
        written = limit.text.replace(" ", "").replace("_", "")
        if limit.interval is not None:
            # "batchsize∈(0,8192]", "kernel_h∈(0,7]"; the seed glues a condition's value to
            # the first name of its line: "reflectchannel∈(0,8192],height∈(0,8192],...".
            name = limit.rule.get("element", limit.subject).replace("_", "")
            prefix = "".join(str(v) for values in limit.condition.values() for v in values)
            pairs = dict(re.findall(r"([a-z]+)∈([\[(]-?\d+,-?\d+[\])])", written))
            found = pairs.get(name, pairs.get(prefix + name))
            assert found == limit.interval.text, limit.id
        if limit.kind == "dtype":
            for dtype, kind in limit.rule["kinds"].items():
                assert f"{dtype}({kind})" in limit.text, limit.id
        elif limit.values is not None and limit.kind != "multi-core":
            for value in limit.values:
                assert str(value).replace("_", "") in written, (limit.id, value)


def test_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(load_yaml(SCHEMA_PATH))


def test_the_seed_is_the_rk3562_file(catalogue: OperatorCatalogue) -> None:
    assert SEED_PATH.name == "rk3562-operators.yaml"
    assert catalogue.platform == "rk3562"


# --- spot checks against the seed ------------------------------------------------------------


def test_pad_reflect_ranges_apply_to_data_when_mode_is_reflect(limits: dict[str, Limit]) -> None:
    width = limits["Pad/data/width@mode=reflect"]
    assert width.kind == "range" and width.condition == {"mode": ("reflect",)}
    assert width.interval is not None and width.interval.text == "(0,8176]"
    assert width.interval.integer_bounds() == (1, 8176)
    assert 8176 in width.interval and 8177 not in width.interval and 0 not in width.interval
    for dim in ("channel", "height"):
        assert str(limits[f"Pad/data/{dim}@mode=reflect"].interval) == "(0,8192]"
    assert limits["Pad/attr/mode"].values == ("constant", "reflect")


def test_hardmax_product_rules(limits: dict[str, Limit]) -> None:
    hw = limits["Hardmax/input/height*width@axis=1"]
    assert hw.kind == "product" and hw.condition == {"axis": (1,)}
    assert hw.rule["factors"] == ("height", "width") and hw.rule["less_than"] == 16384
    ch = limits["Hardmax/input/channel*height@axis=3,-1"]
    assert ch.condition == {"axis": (3, -1)}
    assert ch.rule["factors"] == ("channel", "height") and ch.rule["less_than"] == 16384
    assert "transpose specification" in ch.rule["note"]
    assert set(limits["Hardmax/attr/axis"].values or ()) == {1, 3, -1}


def test_pow_exponents_exactly(limits: dict[str, Limit]) -> None:
    pow_y = limits["Pow/Y/values"]
    assert pow_y.kind == "values"
    assert pow_y.values is not None and sorted(pow_y.values) == [-0.5, 0, 0.5, 1, 2, 3]


def test_gru_hidden_size_counts_once_per_role(catalogue: OperatorCatalogue) -> None:
    roles = [
        limit.role
        for limit in catalogue.operators["GRU"].limits()
        if limit.subject == "hidden_size" and limit.kind == "range"
    ]
    assert roles == ["W", "R", "B", "initial_h", "Y", "Y_h"]


def test_gru_batch_size_range_and_multiple_of_four(limits: dict[str, Limit]) -> None:
    batch = limits["GRU/X/batch_size"]
    assert batch.interval is not None
    assert [n in batch.interval for n in (0, 1, 8192, 8193)] == [False, True, True, False]
    rule = limits["GRU/X/batch_size/multiple-of"].rule
    assert dict(rule) == {"when_greater_than": 1, "multiple_of": 4}
    with_rule = {i.split("/")[1] for i in limits if i.startswith("GRU/") and "multiple-of" in i}
    assert with_rule == {"X", "sequence_lens", "initial_h", "Y", "Y_h"}


def test_num_directions_one_or_two(limits: dict[str, Limit]) -> None:
    assert limits["LSTM/initial_c/num_directions"].values == (1, 2)
    assert limits["GRU/W/num_directions"].kind == "values"


def test_quantization_schemes(limits: dict[str, Limit]) -> None:
    assert limits["Max/C/quantization"].values == ("per-layer", "per-channel")
    assert "per-layer/per-channel" in limits["Max/C/quantization"].text
    assert limits["Max/A/quantization"].values == ("per-layer",)
    assert limits["GRU/R/quantization"].values == ("per-layer", "per-channel")


def test_broadcasting_same_as_expand(
    catalogue: OperatorCatalogue, limits: dict[str, Limit]
) -> None:
    for op in ("Div", "Max", "Mul", "MulRelu"):
        for role in ("A", "B"):
            limit = limits[f"{op}/{role}/broadcast"]
            assert limit.rule == {"arbitrary_dims": True, "same_as": "Expand"}
    forms = [limit for limit in catalogue.operators["Expand"].limits() if limit.kind == "broadcast"]
    assert [(f.rule["from"], f.subject) for f in forms] == [
        ("[b,c,1,w]", "h"),
        ("[b,1,1,w]", "h"),
        ("[b,c,h,1]", "w"),
        ("[b,1,h,1]", "w"),
        ("[b,c,1,1]", "h"),
        ("[b,c,1,1]", "w"),
    ]
    assert {str(f.interval) for f in forms} == {"[1,8192]"}
    assert "Expand/broadcast/[b,c,1,w]->[b,c,h,w]/h" in limits


def test_gather_rank_and_axis(limits: dict[str, Limit]) -> None:
    assert limits["Gather/Indices/rank"].values == (1,)
    assert limits["Gather/attr/axis"].values == (0, 1, 2, 3)


def test_pooling_attributes(catalogue: OperatorCatalogue, limits: dict[str, Limit]) -> None:
    kernel_h = limits["MaxPool/attr/kernel_shape/kernel_h"]
    assert str(kernel_h.interval) == "(0,7]" and kernel_h.rule == {
        "element": "kernel_h",
        "index": 0,
    }
    assert limits["AveragePool/attr/pad/pad_right"].rule["index"] == 3
    assert str(limits["GlobalMaxPool/attr/strides/strides_w"].interval) == "(0,8]"
    assert str(limits["GlobalAveragePool/input/height"].interval) == "(0,7]"
    assert str(limits["AveragePool/input/height"].interval) == "(0,8192]"
    for op in ("MaxPool", "GlobalMaxPool", "AveragePool", "GlobalAveragePool"):
        assert limits[f"{op}/attr/auto_pad"].values == ("NOTSET",)
        assert limits[f"{op}/attr/ceil_mode"].kind == "unsupported"
        assert limits[f"{op}/attr/count_include_pad"].values == (1,)
    assert limits["MaxPool/attr/storage_order"].values == (0,)
    assert "AveragePool/attr/storage_order" not in limits


def test_recurrent_attributes(catalogue: OperatorCatalogue, limits: dict[str, Limit]) -> None:
    for op in ("GRU", "LSTM"):
        assert limits[f"{op}/attr/direction"].values == ("forward", "reverse", "bidirectional")
        assert set(limits[f"{op}/attr/input_layout"].values or ()) == {"snc", "(sn)c"}
        assert set(limits[f"{op}/attr/output_layout"].values or ()) == {"sbnc", "(sn)c"}
        # "no limitation, N-alignment recommended": advice on the model, not a limit.
        attrs = catalogue.operators[op].attributes
        assert attrs["sequence_size"].recommended_multiple_of == 4
        assert attrs["hidden_size"].recommended_multiple_of == 8
        assert f"{op}/attr/sequence_size" not in limits
    assert limits["GRU/attr/linear_before_reset"].values == (1, 0)
    for attr in ("proj_size", "input_forget", "has_projection"):
        assert limits[f"LSTM/attr/{attr}"].kind == "fixed"
        assert limits[f"LSTM/attr/{attr}"].values == (0,)


def test_data_types_and_kinds(catalogue: OperatorCatalogue) -> None:
    ops = catalogue.operators
    assert ops["Div"].data_dtypes() == ("float16",)
    assert ops["Expand"].data_dtypes() == ("int8", "float16")
    assert ops["GRU"].data_dtypes() == ("float16",)
    assert ops["MulRelu"].data_dtypes() == ("int8", "float16")
    assert dict(ops["Div"].dtypes["T2"].kinds) == {"float": "constTensor"}
    assert ops["Pad"].dtypes["T3"].dtypes("Scalar") == ("float", "int8", "float16")
    assert ops["Pow"].dtypes["T2"].dtypes() == ("int8", "int32", "int64", "float16", "float")


def test_mulrelu_is_mul_with_multi_core(catalogue: OperatorCatalogue) -> None:
    mul, mul_relu = catalogue.operators["Mul"], catalogue.operators["MulRelu"]
    assert mul_relu.same_as == "Mul"
    assert mul_relu.roles == mul.roles and mul_relu.dtypes == mul.dtypes
    assert (mul.multi_core.status, mul_relu.multi_core.status) == ("not-stated", "supported")


def test_multi_core_status_as_stated(catalogue: OperatorCatalogue) -> None:
    statuses = {name: op.multi_core.status for name, op in catalogue.operators.items()}
    not_yet = {"GRU", "Gather", "Hardmax", "LSTM", "Max", "Pad", "Pow"}
    assert {n for n, s in statuses.items() if s == "not-yet-supported"} == not_yet
    assert {n for n, s in statuses.items() if s == "supported"} == {"MulRelu"}


# --- loader errors and tolerance overrides ----------------------------------------------------


def _variant(tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    document = yaml.safe_load(SEED_PATH.read_text(encoding="utf-8"))
    change(document["operators"])
    path = tmp_path / "rk3562-operators.yaml"
    path.write_text(yaml.safe_dump(document, allow_unicode=True, sort_keys=False), "utf-8")
    return path


_DROP = object()


def _edit(*keys: str | int, value: object = _DROP) -> Callable[[dict[str, Any]], None]:
    """Set (or, without a value, delete) the entry at ``operators.<keys>``."""

    def change(ops: dict[str, Any]) -> None:
        node: Any = ops
        for key in keys[:-1]:
            node = node[key]
        if value is _DROP:
            del node[keys[-1]]
        else:
            node[keys[-1]] = value

    return change


def _rename(*keys: str | int, to: str) -> Callable[[dict[str, Any]], None]:
    """Rename the mapping key at ``operators.<keys>``."""

    def change(ops: dict[str, Any]) -> None:
        node: Any = ops
        for key in keys[:-1]:
            node = node[key]
        node[to] = node.pop(keys[-1])

    return change


BROKEN = [
    pytest.param(
        _edit("GRU", "inputs", 0, "dims", "batch_size", "range", value="(0,8192"),
        "operators.GRU.inputs[0].dims.batch_size.range",
        "'(0,8192'",
        id="bad-interval",
    ),
    pytest.param(
        _edit(
            "MaxPool", "attributes", "kernel_shape", "elements", "kernel_h", "range", value="(7,0]"
        ),
        "operators.MaxPool.attributes.kernel_shape.elements.kernel_h.range",
        "'(7,0]'",
        id="reversed-interval",
    ),
    pytest.param(
        _edit("Div", "inputs", 1, "types", value=["T1", "T9"]),
        "operators.Div.inputs[1].types[1]",
        "'T9'",
        id="unknown-type-variable",
    ),
    pytest.param(
        _edit("Pow", "dtypes"), "operators.Pow", "'dtypes' is a required property", id="missing-key"
    ),
    pytest.param(
        _edit("GRU", "inputs", 4, "optional", value="yes"),
        "operators.GRU.inputs[4].optional",
        "'yes'",
        id="wrong-type",
    ),
    pytest.param(
        _edit("GRU", "inputs", 0, "quantisation", value={}),
        "operators.GRU.inputs[0]",
        "'quantisation' was unexpected",
        id="unknown-field",
    ),
    pytest.param(
        _edit("MulRelu", "same_as", "operator", value="Mull"),
        "operators.MulRelu.same_as.operator",
        "'Mull'",
        id="same-as-unknown-operator",
    ),
    pytest.param(
        _edit("Max", "inputs", 0, "broadcasting", "same_as", value="Mul"),
        "operators.Max.inputs[0].broadcasting.same_as",
        "'Mul'",
        id="broadcast-same-as-without-forms",
    ),
    pytest.param(
        _rename("LSTM", "inputs", 0, "dims", "batch_size", to="batchsize"),
        "operators.LSTM.inputs[0].dims.batchsize",
        "'batchsize'",
        id="dimension-not-in-shape",
    ),
    pytest.param(
        _rename("MaxPool", "attributes", "strides", "elements", "strides_h", to="stride_h"),
        "operators.MaxPool.attributes.strides.elements.stride_h",
        "'stride_h'",
        id="element-not-in-attribute-type",
    ),
    pytest.param(
        _edit("Hardmax", "inputs", 0, "products", 0, "when", "axis", value=[2]),
        "operators.Hardmax.inputs[0].products[0].when.axis",
        "2",
        id="condition-value-not-allowed",
    ),
    pytest.param(
        _edit("Expand", "broadcast_forms", 0, "from", value="[b,c,h,w]"),
        "operators.Expand.broadcast_forms[0].dims.h",
        "'h'",
        id="broadcast-dim-not-size-one",
    ),
    pytest.param(
        _edit("GRU", "outputs", 0, "dims", "batch_size", "rule", "when_greater_than", value=9000),
        "operators.GRU.outputs[0].dims.batch_size.rule.when_greater_than",
        "9000",
        id="rule-outside-range",
    ),
    pytest.param(
        _edit("Pad", "attributes", "mode", "per_value", "edge", value={"text": "edge"}),
        "operators.Pad.attributes.mode.per_value.edge",
        "'edge'",
        id="per-value-not-a-value",
    ),
    pytest.param(
        _edit("LSTM", "attributes", "input_forget", "fixed", value=2),
        "operators.LSTM.attributes.input_forget.fixed",
        "2",
        id="fixed-not-nominal",
    ),
    pytest.param(
        _edit("Div", "tolerance", value={"int8": {"atol": 0.1}}),
        "operators.Div.tolerance.int8",
        "'int8'",
        id="tolerance-undocumented-dtype",
    ),
]


@pytest.mark.parametrize(("change", "where", "shown"), BROKEN)
def test_malformed_catalogue_is_rejected_precisely(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], where: str, shown: str
) -> None:
    path = _variant(tmp_path, change)
    with pytest.raises(DataFileError) as caught:
        load_operators(path, PLATFORMS)
    message = str(caught.value)
    assert message.startswith(f"{path}: {where}: "), message
    assert shown in message


def test_a_platform_not_of_the_vendor_is_refused_in_words(tmp_path: Path) -> None:
    raw = yaml.safe_load(SEED_PATH.read_text(encoding="utf-8"))
    raw["platform"] = "acme-x1"  # any spelling passes the schema; the vendor's list decides
    bad = tmp_path / "rk3562-operators.yaml"
    bad.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    with pytest.raises(DataFileError) as caught:
        load_operators(bad, PLATFORMS)
    assert str(caught.value) == (
        f"{bad}: platform: is not a platform of the file's vendor (its platforms: "
        f"{', '.join(PLATFORMS)}) (value: 'acme-x1')"
    )
    assert load_operators(bad, ("acme-x1",)).platform == "acme-x1"


def test_tolerance_override_is_loaded(tmp_path: Path) -> None:
    tolerance = {"float16": {"atol": 0.01, "rtol": 0.001, "min_cosine": 0.999}, "int8": {"atol": 1}}
    variant = _variant(tmp_path, _edit("LSTM", "tolerance", value=tolerance))
    catalogue = load_operators(variant, PLATFORMS)
    assert dict(catalogue.operators["LSTM"].tolerance) == {
        "float16": Tolerance(0.01, 0.001, 0.999),
        "int8": Tolerance(1, None, None),
    }
    assert not catalogue.operators["GRU"].tolerance


def test_contradictions_the_document_makes_are_marked(limits: dict[str, Limit]) -> None:
    marked = {i: lim.inconsistent for i, lim in limits.items() if lim.inconsistent}
    assert set(marked) == {"GRU/dtype/T3", "GRU/attr/output_layout", "LSTM/attr/output_layout"}
    # sequence_lens is shaped [batch_size] yet typed a Scalar
    assert limits["GRU/dtype/T3"].rule["roles"] == ("sequence_lens",)
    assert limits["GRU/dtype/T3"].rule["kinds"] == {"float": "Scalar"}
    assert limits["LSTM/dtype/T2"].inconsistent is None
    # the layout limit names the layout the reason is about
    assert marked["LSTM/attr/output_layout"].startswith("(sn)c: ")


def test_an_empty_inconsistency_reason_is_refused(tmp_path: Path) -> None:
    raw = yaml.safe_load(SEED_PATH.read_text(encoding="utf-8"))
    raw["operators"]["Pow"]["dtypes"]["T1"]["inconsistent"] = ""
    bad = tmp_path / "rk3562-operators.yaml"
    bad.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    with pytest.raises(DataFileError, match=r"operators\.Pow\.dtypes\.T1\.inconsistent"):
        load_operators(bad, PLATFORMS)
