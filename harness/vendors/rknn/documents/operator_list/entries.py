"""A chapter-3 operator entry read into its roles, fused operators and limits.

Each limit keeps the verbatim line it reads (with the line that defines its condition or its
named constants, when those are elsewhere), the section and the printed page. Lines that
state no limit (what an attribute means) are kept as the entry's ``notes``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from harness.vendors.rknn.documents.operator_list import reading
from harness.vendors.rknn.documents.operator_list.document import Entry, Item

# A role and its type variables (``x_tensor : *T2``: a stray asterisk before the type).
_ROLE = re.compile(
    r"^(?P<name>[A-Za-z_]\w*)\s*(?P<opt1>\(optional\))?\s*:\s*"
    r"\*?(?P<types>T\w*(?:\s*,\s*T\w*)*)\s*(?P<opt2>\(optional\))?\s*$"
)
_SAME_ROLES = re.compile(r"^同\s*(?P<op>\w+)$")
_ATTRIBUTE = re.compile(r"^(?P<name>[A-Za-z_]\w*)\s*(?P<extern>\(extern\))?\s*(?P<rest>.*)$")
_CONDITION = re.compile(
    r"^(?P<name>[a-z_]+)\s*=\s*(?P<value>\[[^\]]*\]|[-\w/]+)\s*(?:时)?\s*,?\s*(?P<rest>.*)$"
)
_TYPED_RULES = re.compile(r"^(?P<vars>T\d*(?:\s*,\s*T\d*)*)\s*:\s*(?P<rules>.*[<>=%].*)$")
_OPTION = re.compile(r"^(?P<key>\(?\w+\)?\w*)\s*:\s*(?P<desc>.+)$")
_SUBJECT_TO_TAIL = re.compile(r"[,;]?\s*且?受限于\s*(?P<op>\w+)\s*的规格限制\s*$")
_FUSED = re.compile(r"^(?P<a>\w+)\s*与\s*(?P<b>[\w/]+)\s*(?:及\s*(?P<c>\w+)\s*)?融合计算")
# An entry whose whole body is one bullet saying the operator is not supported (RK2118
# AveragePool: "• 不支持 (工具端转换成卷积实现)", exSoftmaxMask: "• 尚不支持").
_UNSUPPORTED = re.compile(r"^\s*•\s*(?P<text>(?:尚|暂)?不支持.*)$")
# A feature of the operator that may be switched on (exSDPAttention's FlashAttentionV2); the
# lines under it hold when it is.
_FEATURE = re.compile(r"^(?P<name>[A-Za-z]\w*)(?:\(\w+\))?\s*:\s*支持$")
# Free-text rules, each with why it is not structured.
_UNSTRUCTURED = {
    "要求填写": "a requirement on how the model is written (its extern layout and size "
    "attributes filled in), not a quantity a case can vary",
    "版本 >=": "a requirement on the RKNPU driver or runtime release, not on the model",
    "subc": "a condition over single list elements (starts[1], ends[1], steps[1]) and a "
    "quantity the document does not define (subc)",
}


@dataclass
class _Context:
    role: str
    subject: str
    condition: dict[str, list[Any]] = field(default_factory=dict)
    constants: dict[str, int] = field(default_factory=dict)
    preamble: list[str] = field(default_factory=list)  # verbatim lines the limit rests on


@dataclass
class _Reader:
    targets: Mapping[str, str]
    limits: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, item: Item, found: list[dict[str, Any]], context: _Context) -> None:
        text = "\n".join([*context.preamble, item.verbatim])
        for one in found:
            limit = {"role": context.role, "subject": context.subject, **one}
            condition = {**context.condition, **one.get("condition", {})}
            if condition:
                limit["condition"] = {k: list(v) for k, v in condition.items()}
            limit.update({"text": text, "page": item.page})
            self.limits.append(limit)

    def read(self, item: Item, context: _Context, block: str) -> None:
        """One item and what hangs below it."""
        text = reading.normalise(item.text)
        if text in ("量化支持", "广播支持") or text.startswith(("量化支持:", "广播支持 ")):
            self.role_feature(item, text, context)
            return
        if text == "广播约束" and context.role not in ("op", "attr", "dtype", "broadcast"):
            self.broadcast_constraint(item, context)
            return
        typed = _TYPED_RULES.match(text) if block == "属性列表" else None
        if typed:
            self.typed_rules(item, typed, context)
            return
        condition = _CONDITION.match(text) if block != "数据类型约束" else None
        if condition and (block == "属性列表" or condition["name"] == "axis"):
            value = condition["value"]
            values = [value] if "[" in value else [reading.scalar(v) for v in value.split("/")]
            under = {**context.condition, condition["name"]: values}
            rest = condition["rest"].strip().rstrip(";")
            if rest:  # "axis=1, height * width < 16384": the rule is on the same line
                self.leaf(item, rest, replace(context, condition=under), block)
            inner = replace(context, condition=under, preamble=[*context.preamble, item.verbatim])
            for child in item.children:
                self.read(child, inner, block)
            return
        self.leaf(item, text, context, block)
        inner = replace(context, subject="shape") if reading.shape(text) else context
        feature = _FEATURE.match(text) if block == "其他支持" else None
        if feature:
            inner = replace(context, condition={**context.condition, feature["name"]: ["on"]})
        options = self.enum(item, context)
        for child in item.children:
            if child not in options:
                self.read(child, inner, block)

    def leaf(self, item: Item, text: str, context: _Context, block: str) -> None:
        found = self.reading_of(text, context, block)
        if found is None:
            if reading.is_limit(text):
                why = next((r for k, r in _UNSTRUCTURED.items() if k in text), None)
                found = [reading.free(why or "no structured reading of this wording")]
            else:
                if not item.children:
                    self.notes.append(item.verbatim)
                return
        if found:
            self.add(item, found, context)

    def reading_of(self, text: str, context: _Context, block: str) -> list[dict[str, Any]] | None:
        subject_to = _SUBJECT_TO_TAIL.search(text)
        if subject_to and subject_to.start() > 0:
            found = self.reading_of(text[: subject_to.start()].rstrip(" ,;"), context, block)
            for one in found or []:
                if one["kind"] != "free-text":
                    one.setdefault("rule", {})["subject_to"] = subject_to["op"]
            return found
        if block == "数据类型约束":
            return reading.dtype(text)
        if block == "广播约束":
            return reading.broadcast(text)
        core = reading.multi_core(text, self.targets)
        if core is not None:
            return [{"role": "op", "subject": "multi-core", **core}]
        shape = reading.shape(text)
        if shape is not None:
            return [shape]
        found = reading.ranges(text, None)
        if found is not None:
            return _value_condition(found, context.subject)
        if any(k in text for k in _UNSTRUCTURED):
            return None
        if "且" in text or "等于" in text:
            words = reading.in_words(text, context.constants)
            if words is not None:
                return words
        scaled = reading.scales(text)
        if scaled is not None:
            return scaled
        said = reading.conditional(text, context.subject) or reading.statement(
            text, context.subject
        )
        if said is not None:
            if context.subject == "shape" == said.get("subject") and said["kind"] in (
                "values",
                "fixed",
            ):
                # A set under a tensor's shape without a dimension's name is what the tensor
                # holds: the values of a constant input (Pow's exponent Y).
                said["subject"] = "values"
            return [said]
        feature = _FEATURE.match(text)
        if feature and block == "其他支持":
            return [
                {
                    "role": "op",
                    "subject": feature["name"],
                    "kind": "feature",
                    "values": ["supported"],
                }
            ]
        rank = re.search(r"秩 rank = (?P<n>\d+)", text)
        if rank:
            return [{"kind": "rank", "subject": "rank", "values": [int(rank["n"])]}]
        if re.fullmatch(r"[\w\s*+\-/%()<>=.]+", text) and re.search(r"[<>=]", text):
            return [reading.formula(text, context.constants)]
        return None

    def role_feature(self, item: Item, text: str, context: _Context) -> None:
        """A role's quantization schemes or broadcasting, written as one line or a list."""
        lines = [text, *(reading.normalise(c.text) for c in list(item.walk())[1:])]
        verbatim = _Item(item)
        if text.startswith("量化支持"):
            schemes = [
                s
                for line in lines
                for s in re.split(r"[/\s]+", line.removeprefix("量化支持").strip(" :"))
                if s.startswith("per-")
            ]
            found: dict[str, Any] = {
                "kind": "quantization",
                "subject": "quantization",
                "values": schemes,
            }
            if not schemes:
                found = {"subject": "quantization", **reading.free("no quantization scheme named")}
        else:
            joined = " ".join(lines[1:] or [text.removeprefix("广播支持")])
            same_as = re.search(r"广播约束同\s*(?P<op>\w+)\s*算子", joined)
            arbitrary = "支持任意维度广播操作" in joined
            if arbitrary or same_as:
                rule: dict[str, Any] = {"arbitrary_dims": arbitrary}
                if same_as:
                    rule["same_as"] = same_as["op"]
                # exSDPAttention's mask: "开启 FA 支持后, 只支持 [b,c,1,1], [1,c,1,1] 和 [1,c,h,w]
                # 三种规格": the shapes left when FlashAttentionV2 is on
                feature = re.search(
                    r"开启\s*(?P<f>\w+)\s*支持后\s*,\s*只支持(?P<shapes>.+?)[两三四五]种规格",
                    joined,
                )
                if feature:
                    shapes = re.findall(r"\[[^\]]*\]", feature["shapes"])
                    rule["when_feature_on"] = {feature["f"]: shapes}
                found = {"kind": "broadcast-support", "subject": "broadcast", "rule": rule}
            elif forms := re.findall(r"OP\(A\([^()]*\),\s*B\((?P<b>[^()]*)\)\)", joined):
                # "OP(A(N,C,H,W),B(C,1,1))": the shapes B may take against A(N,C,H,W)
                found = {
                    "kind": "broadcast-support",
                    "subject": "broadcast",
                    "values": [f"[{form}]" for form in forms],
                    "rule": {"arbitrary_dims": False},
                }
            elif re.fullmatch(r"(\[[^\]]*\]\s*)+", joined.strip()):
                shapes = re.findall(r"\[[^\]]*\]", joined)
                found = {
                    "kind": "broadcast-support",
                    "subject": "broadcast",
                    "values": shapes,
                    "rule": {"arbitrary_dims": False},
                }
            elif re.fullmatch(r"\*?\s*无", joined.strip()):
                found = {
                    "kind": "broadcast-support",
                    "subject": "broadcast",
                    "rule": {"arbitrary_dims": False, "none": True},
                }
            else:
                found = {"subject": "broadcast", **reading.free("broadcasting described in words")}
        self.add(verbatim, [found], context)

    def broadcast_constraint(self, item: Item, context: _Context) -> None:
        """``– 广播约束`` / ``* 广播约束同Expand算子`` under a role (Where): the constraints of
        the role's broadcasting, added to what its ``广播支持`` says."""
        joined = " ".join(reading.normalise(c.text) for c in list(item.walk())[1:])
        same_as = re.fullmatch(r"广播约束同\s*(?P<op>\w+)\s*算子", joined)
        if same_as is None:
            found = {"subject": "broadcast", **reading.free("broadcast constraint in words")}
            self.add(_Item(item), [found], context)
            return
        stated = [
            lim
            for lim in self.limits
            if lim["role"] == context.role and lim["kind"] == "broadcast-support"
        ]
        if not stated:
            rule = {"arbitrary_dims": False, "same_as": same_as["op"]}
            found = {"kind": "broadcast-support", "subject": "broadcast", "rule": rule}
            self.add(_Item(item), [found], context)
            return
        stated[-1]["rule"]["same_as"] = same_as["op"]
        stated[-1]["text"] += "\n" + _Item(item).verbatim

    def typed_rules(self, item: Item, match: re.Match[str], context: _Context) -> None:
        """``T1: h1%16=0, h1*w1<16*p``: one formula per rule, per type variable."""
        variables = [v.strip() for v in match["vars"].split(",")]
        for rule in _top_level_split(match["rules"]):
            if not rule:
                continue
            found = reading.formula(rule, context.constants)
            condition = {**context.condition, "type": variables}
            self.add(
                item,
                [{**found, "subject": found.get("subject") or rule}],
                replace(context, condition=condition),
            )

    def enum(self, item: Item, context: _Context) -> list[Item]:
        """An attribute's named options (``forward: …``, ``snc: …``) as one ``enum`` limit;
        the option items it consumed."""
        found = _options(item) if context.role == "attr" else []
        if found:
            keys = [_option_key(c) for c in found]
            self.add(_Item(item, found), [{"kind": "enum", "values": keys}], context)
        return found

    def attribute(self, item: Item) -> None:
        """An attribute and its rules; named constants (``其中 p=8192, q=2048``) go to the
        rules that use them, with the line that defines them."""
        match = _ATTRIBUTE.match(reading.normalise(item.text))
        lines = list(item.walk())
        constants = reading.constants(" ".join(c.text for c in lines))
        defining = [c.verbatim for c in lines if reading.constants(c.text)]
        context = _Context("attr", match["name"] if match else "", {}, constants)
        options = self.enum(item, context)
        for child in item.children:
            if child in options or (reading.constants(child.text) and not child.children):
                continue
            uses = _uses_constants(child, constants)
            self.read(child, replace(context, preamble=defining if uses else []), "属性列表")


class _Item(Item):
    """An item whose verbatim text is its own line plus those of some children (default: of
    everything below it)."""

    def __init__(self, item: Item, children: list[Item] | None = None) -> None:
        lines = list(item.lines)
        for child in children if children is not None else list(item.walk())[1:]:
            lines.extend(child.lines)
        super().__init__(item.level, lines, [])


def fuses(description: str, same_as: str | None) -> list[str]:
    """``Convolution 与 Add 及 Relu 融合计算`` -> Convolution, Add, Relu (the base spelled as
    in the entry's ``说明及规格限制同…``)."""
    spaced = reading.normalise(description)  # justified lines space out CJK: "融 合 计 算"
    match = _FUSED.match(re.sub(r"(?<=[\u4e00-\u9fff]) (?=[\u4e00-\u9fff])", "", spaced))
    if not match:
        return []
    parts = [match["a"], match["b"], *([match["c"]] if match["c"] else [])]
    if same_as and parts[0] != same_as:
        parts[0] = same_as
    return parts


def read_entry(entry: Entry, targets: Mapping[str, str]) -> dict[str, Any]:
    """The YAML form of an entry (without its version and group)."""
    name = entry.section.title
    reader = _Reader(targets)
    roles: list[dict[str, Any]] = []
    roles_same_as: str | None = None
    for block, items in entry.blocks.items():
        for item in items:
            text = reading.normalise(item.text)
            if block in ("输入列表", "输出列表"):
                role = _ROLE.match(text)
                same = _SAME_ROLES.match(text)
                if same:
                    roles_same_as = same["op"]
                    continue
                if role:
                    roles.append(
                        {
                            "name": role["name"],
                            "direction": "input" if block == "输入列表" else "output",
                            "types": [t.strip() for t in role["types"].split(",")],
                            "optional": bool(role["opt1"] or role["opt2"]),
                        }
                    )
                    for child in item.children:
                        reader.read(child, _Context(role["name"], ""), block)
                    continue
                reader.read(item, _Context("input" if block == "输入列表" else "output", ""), block)
            elif block == "属性列表":
                reader.attribute(item)
            elif block == "数据类型约束":
                reader.read(item, _Context("dtype", ""), block)
            elif block == "广播约束":
                reader.read(item, _Context("broadcast", ""), block)
            else:
                reader.read(item, _Context("op", ""), block)
    described = entry.description
    said = [(line, m) for line in described if (m := _UNSUPPORTED.match(line.text))]
    if said and not entry.blocks and not entry.same_as:
        line, unsupported = said[0]
        described = [x for x in described if x is not line]
        reader.limits.append(
            {
                "role": "op",
                "subject": "unsupported",  # its id: AveragePool/op/unsupported
                "kind": "absent",
                "rule": {"unsupported": True},
                "text": unsupported["text"].strip(),
                "page": line.page,
            }
        )
    description = "\n".join(line.text.strip() for line in described)
    out: dict[str, Any] = {
        "name": name,
        "section": entry.section.number,
        "page": entry.section.page,
        "description": description,
    }
    fused = fuses(description, entry.same_as)
    if fused:
        out["fuses"] = fused
    if entry.same_as:
        out["same_as"] = entry.same_as
    if roles_same_as:
        out["roles_same_as"] = roles_same_as
    if roles:
        out["roles"] = roles
    if reader.notes:
        out["notes"] = reader.notes
    headings = _headings(entry, reader)
    if headings:
        out["headings"] = headings
    out["limits"] = reader.limits
    return out


def _headings(entry: Entry, reader: _Reader) -> list[str]:
    """The lines of the entry's blocks that are in no limit and no note: the headings of
    roles (``X : T1``), attributes (``axis: int64``) and of the rules under them
    (``设置 pad 时注意:``), and named constants no rule uses. They state no rule of their own;
    ``tests/vendors/rknn/documents/operator_list/test_operator_list.py`` checks that against the
    document's wording."""
    said = {line for one in reader.limits for line in one["text"].splitlines()}
    said |= {line for note in reader.notes for line in note.splitlines()}
    lines = [
        line.text.strip()
        for items in entry.blocks.values()
        for item in items
        for one in item.walk()
        for line in one.lines
    ]
    return [line for line in lines if line not in said]


def _option_key(item: Item) -> str:
    match = _OPTION.match(reading.normalise(item.text))
    assert match is not None  # only items _options matched
    return match["key"]


def _options(item: Item) -> list[Item]:
    """Children that name an option and say what it means (two or more of them)."""
    found = [
        c
        for c in item.children
        if not c.children
        and (m := _OPTION.match(reading.normalise(c.text)))
        and not reading.is_limit(m["desc"].replace("layout", ""))
        and "参考" not in m["desc"]
    ]
    return found if len(found) >= 2 else []


def _uses_constants(item: Item, constants: Mapping[str, int]) -> bool:
    if not constants:
        return False
    words = set(re.findall(r"[A-Za-z_]\w*", " ".join(c.text for c in item.walk())))
    return bool(words & set(constants))


def _top_level_split(text: str) -> list[str]:
    """Split at commas outside parentheses: ``a<1, (b=1, c=2) or (d=1)`` is two rules."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [p for p in [*parts, current.strip()] if p]


def _value_condition(found: list[dict[str, Any]], attribute: str) -> list[dict[str, Any]]:
    """``reflect channel ∈ (0, 8192] , height ∈ …``: ranges that hold when ``attribute`` has
    the value the line starts with (Pad's mode=reflect)."""
    first = found[0]["subject"].split(" ")
    if len(first) != 2 or not attribute:
        return found
    found[0]["subject"] = first[1]
    return [{**one, "condition": {attribute: [first[0]]}} for one in found]
