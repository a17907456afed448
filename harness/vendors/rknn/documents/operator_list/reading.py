"""One line of an operator entry read as a structured limit, or kept as free text with why.

A reading is a dict of ``Limit`` fields (``harness.documented.limits``) without the id, text and
source, which the caller adds. The wording the document uses for each kind:

- ``x ∈ [1, 31]``, ``(0, 8192]``, ``(0, ∞]``: a range; ``∈ {0, 1, 2, 3}``: a set (``values``);
  ``, 大于 1 时仅支持 4 的倍数``: multiples of 4 above 1 (a second, ``multiple-of`` limit).
- ``仅支持 1,2,4,8``, ``目前仅支持 nearest 和 linear``, ``num directions: 1 or 2``: a set.
- ``目前限定 0``: a fixed value; ``不支持``, ``目前不支持设置``: not supported (``unsupported``).
- ``无限制``: no limit (``no-limit``), with a recommended alignment when one follows.
- ``h1*w1<16*p``: a product of named dimensions below a constant (``product``), the
  constants (``p=8192``) read from the attribute's text; any other comparison over named
  dimensions is a ``formula``; ``不支持 <comparison>``: the comparison names what is not
  supported (``rule.unsupported_when``).
- ``T1: int8(Tensor), float16(Tensor)``: a type variable's data types (``dtype``).
- ``[b, c, 1, w]->[b, c, h, w], h ∈ [1, 8192]``: a broadcast form (``broadcast``).
- ``多核联合: 支持`` and its variants: ``multi-core``.
- ``做 softmax 的轴: 1,3``: the operator's axes (``values`` on ``axis``); ``支持 add 和 mul
  可选``: an attribute's options (``enum``); ``目前仅支持宽高方向的整数倍缩放, 且缩放倍数为
  2‑8 的整数倍``: Resize's integer scales (``values`` on ``scale_h`` and ``scale_w``).
- Comparisons in words, joined by 且: ``height ∗ width 等于 1 或大于 8`` is the formula
  ``height * width = 1 or height * width > 8``; ``(h1=w1=1, n1%4=0) or (…)`` joins the
  rules inside each alternative with "and".
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from harness.documented.intervals import Interval

Reading = dict[str, Any]

_INTERVAL_TEXT = r"[\[(]\s*-?[\w.]+\s*,\s*(?:-?[\w.]+|∞)\s*[\])]"
_IN_RANGE = re.compile(rf"(?P<name>[A-Za-z_][\w *]*?)\s*∈\s*(?P<interval>{_INTERVAL_TEXT})")
_IN_SET = re.compile(r"(?P<name>[A-Za-z_]\w*)\s*∈\s*\{(?P<values>[^}]*)\}")
_MULTIPLE = re.compile(r"大于\s*(?P<above>\d+)\s*时仅支持\s*(?P<of>\d+)\s*的倍数")
_DTYPE_VAR = re.compile(r"^(?P<vars>T\w*(?:\s*,\s*T\w*)*)\s*:\s*(?P<types>.+)$")
_DTYPE = re.compile(r"^(?P<dtype>[a-z]+\d*)\s*\((?P<kind>const Tensor|Tensor|Scalar)\)$")
_BROADCAST = re.compile(r"^\[(?P<src>[^\]]+)\]\s*->\s*\[(?P<dst>[^\]]+)\]\s*,\s*(?P<rest>.+)$")
_MULTI_CORE = re.compile(r"^多核联合\s*:\s*(?P<status>.+)$")
_SHAPE = re.compile(r"^shape\s*:\s*\[(?P<dims>[^\]]*)\]\s*(?P<rest>.*)$")
_SUBJECT_TO = re.compile(r"^且?受限于\s*(?P<op>\w+)\s*的规格限制$")
_ONLY = re.compile(r"(?:目前|当前)?(?:仅|只)支持\s*(?P<values>.+?)\s*(?:[两三四五六]种.*)?$")
_FIXED = re.compile(r"目前限定\s*(?P<value>-?\d+)")
_OR_VALUES = re.compile(r"^(?P<a>-?\w+)(?:\(T\))?\s+or\s+(?P<b>-?\w+)(?:\(F\))?$")
_NO_LIMIT = re.compile(r"无限制")
_ALIGN_HINT = re.compile(r"建议\s*(?P<n>\d+)\s*对齐")
_CONSTANT = re.compile(r"\b(?P<name>[a-z])\s*=\s*(?P<value>\d+)\b")
_COMPARE = re.compile(r"(<=|>=|==|!=|<|>|=)")
# Text without any of these is a description of the operand, not a limit.
_LIMIT_WORDS = re.compile(r"∈|<|>|=|仅|只|支持|限制|限定|要求|对齐|必须|受限|倍数|\bor\b|无$")

_MULTI_CORE_STATUS = {
    "支持": "supported",
    "暂不支持": "not-yet-supported",
    "尚不支持": "not-yet-supported",
    "不支持": "not-supported",
}


_PLAIN = str.maketrans(
    {"‑": "-", "∗": "*", "，": ",", "：": ":", "（": "(", "）": ")", "、": ",", "；": ";", "−": "-"}
)


def normalise(text: str) -> str:
    """The document's typography made plain: non-breaking hyphens, full-width punctuation."""
    return re.sub(r"\s+", " ", text.translate(_PLAIN)).strip()


def normalise_keep_columns(text: str) -> str:
    """As ``normalise``, one character for one, so table columns stay where they were."""
    return text.translate(_PLAIN)


def interval(text: str) -> Interval:
    """An interval as the document writes it (``(0, ∞]``), its spelling kept."""
    plain = Interval.parse(text.replace("∞", "inf").replace(" ", ""))
    return Interval(plain.lo, plain.hi, plain.lo_closed, plain.hi_closed, text.strip())


def is_limit(text: str) -> bool:
    return bool(_LIMIT_WORDS.search(normalise(text)))


def scalar(text: str) -> int | float | str:
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def free(reason: str) -> Reading:
    return {"kind": "free-text", "rule": {"reason": reason}}


def constants(text: str) -> dict[str, int]:
    """Named constants an attribute defines for its rules: ``(其中 p=8192, q=2048 )``."""
    match = re.search(r"其中\s*(?P<defs>[^)）]*)", text)
    if not match:
        return {}
    return {m["name"]: int(m["value"]) for m in _CONSTANT.finditer(match["defs"])}


# --- formulas -----------------------------------------------------------------------------


class _Names(ast.NodeVisitor):
    """The names of an arithmetic comparison; anything else raises ValueError."""

    ALLOWED = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Mod)

    def __init__(self) -> None:
        self.names: list[str] = []

    def generic_visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Name):
            self.names.append(node.id)
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, int | float):
                raise ValueError(f"not a number: {node.value!r}")
        elif isinstance(node, ast.BinOp):
            if not isinstance(node.op, self.ALLOWED):
                raise ValueError("not +, -, *, / or %")
        elif not isinstance(
            node,
            ast.Expression
            | ast.Compare
            | ast.cmpop
            | ast.operator
            | ast.expr_context
            | ast.BoolOp
            | ast.boolop,
        ):
            raise ValueError(f"not arithmetic: {type(node).__name__}")
        super().generic_visit(node)


def _python(expression: str) -> str:
    return re.sub(r"(?<![<>=!])=(?!=)", "==", expression)


def _alternatives(text: str) -> str:
    """``(h1=w1=1, n1%4=0) or (n1=h1=1, h1%4=0)``: the commas inside each alternative are
    "and"."""
    if not re.search(r"\)\s*or\s*\(", text):
        return text
    return re.sub(r"\(([^()]*)\)", lambda m: "(" + m[1].replace(",", " and ") + ")", text)


def _single(body: ast.expr) -> bool:
    """A comparison (``0 <= a <= b`` too), or "and"s and "or"s of comparisons."""
    if isinstance(body, ast.BoolOp):
        return all(_single(value) for value in body.values)
    return isinstance(body, ast.Compare)


def formula(expression: str, known: Mapping[str, int]) -> Reading:
    """A comparison over named quantities: a product below a constant, or a formula."""
    text = _alternatives(normalise(expression).rstrip(";.。"))
    if not _COMPARE.search(text):
        return free(f"no comparison in {text!r} (a typo in the document?)")
    try:
        tree = ast.parse(_python(text), mode="eval")
        visitor = _Names()
        visitor.visit(tree)
    except (SyntaxError, ValueError) as error:
        return free(f"not an arithmetic comparison: {text!r} ({error})")
    body = tree.body
    if not _single(body):
        return free(f"not a single comparison: {text!r}")
    names = sorted(set(visitor.names) - set(known))
    used = {k: v for k, v in known.items() if k in visitor.names}
    rule: dict[str, Any] = {"expression": text, "names": names}
    if used:
        rule["constants"] = used
    product = _product(body, known) if isinstance(body, ast.Compare) else None
    if product is not None:
        factors, bound, closed = product
        rule.update({"factors": factors, "less_than" if not closed else "at_most": bound})
        return {"kind": "product", "subject": "*".join(factors), "rule": rule}
    return {"kind": "formula", "subject": names[0] if len(names) == 1 else "", "rule": rule}


def _product(body: ast.Compare, known: Mapping[str, int]) -> tuple[list[str], int, bool] | None:
    """``a*b*c < N`` (N an expression of constants) as factors and bound."""
    if not isinstance(body.ops[0], ast.Lt | ast.LtE):
        return None
    factors: list[str] = []
    node: ast.expr = body.left
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        if not isinstance(node.right, ast.Name) or node.right.id in known:
            return None
        factors.insert(0, node.right.id)
        node = node.left
    if not isinstance(node, ast.Name) or node.id in known:
        return None
    factors.insert(0, node.id)
    try:
        bound = eval(
            compile(ast.Expression(body.comparators[0]), "<formula>", "eval"),
            {"__builtins__": {}},
            dict(known),
        )
    except NameError:
        return None
    return factors, int(bound), isinstance(body.ops[0], ast.LtE)


# --- lines --------------------------------------------------------------------------------


def dtype(text: str) -> list[Reading] | None:
    match = _DTYPE_VAR.match(normalise(text))
    if not match:
        return None
    kinds: dict[str, str] = {}
    for part in match["types"].split(","):
        found = _DTYPE.match(part.strip())
        if not found:
            return None
        kinds[found["dtype"]] = found["kind"]
    return [
        {
            "kind": "dtype",
            "role": "dtype",
            "subject": var.strip(),
            "values": list(kinds),
            "rule": {"kinds": kinds},
        }
        for var in match["vars"].split(",")
    ]


def ranges(text: str, subject: str | None = None) -> list[Reading] | None:
    """Every ``name ∈ interval`` or ``name ∈ {set}`` of a line that holds nothing else."""
    plain = normalise(text)
    readings: list[Reading] = []
    rest = plain
    for match in _IN_RANGE.finditer(plain):
        name = match["name"].strip()
        try:
            span = interval(match["interval"])
        except ValueError:
            bound = match["interval"]
            readings.append(formula(f"{bound[1:-1].split(',')[0]} <= {name}", {}))
            readings[-1] = {
                "kind": "formula",
                "subject": name,
                "rule": {"expression": f"{name} ∈ {bound}", "names": [name]},
            }
        else:
            readings.append({"kind": "range", "subject": name, "interval": span.text})
        rest = rest.replace(match[0], "", 1)
    for match in _IN_SET.finditer(plain):
        values = [scalar(v) for v in match["values"].split(",")]
        readings.append({"kind": "values", "subject": match["name"], "values": values})
        rest = rest.replace(match[0], "", 1)
    multiple = _MULTIPLE.search(rest)
    if multiple and readings:
        rest = rest.replace(multiple[0], "", 1)
        readings.append(
            {
                "kind": "multiple-of",
                "subject": readings[0]["subject"],
                "rule": {
                    "when_greater_than": int(multiple["above"]),
                    "multiple_of": int(multiple["of"]),
                },
            }
        )
    if not readings or re.sub(r"[\s,;.。]", "", rest):
        return None
    if subject is not None:
        for reading in readings:
            reading.setdefault("subject", subject)
    return readings


def broadcast(text: str) -> list[Reading] | None:
    match = _BROADCAST.match(normalise(text))
    if not match:
        return None
    found = ranges(match["rest"])
    if found is None:
        return None
    form = {"from": f"[{match['src']}]", "to": f"[{match['dst']}]"}
    src = [d.strip() for d in match["src"].split(",")]
    dst = [d.strip() for d in match["dst"].split(",")]
    for reading in found:
        if reading["kind"] != "range" or reading["subject"] not in dst:
            return None
        if src[dst.index(reading["subject"])] != "1":
            return None
        reading.update({"kind": "broadcast", "role": "broadcast", "rule": form})
    return found


def multi_core(text: str, targets: Mapping[str, str]) -> Reading | None:
    match = _MULTI_CORE.match(normalise(text))
    if not match:
        return None
    status = match["status"].strip()
    if status in _MULTI_CORE_STATUS:
        return {"kind": "multi-core", "values": [_MULTI_CORE_STATUS[status]]}
    per_target: dict[str, str] = {}
    for part in status.split("/"):
        found = re.match(r"^(?P<target>[A-Z]+\d+[A-Z]?)\s*(?P<status>\S+)$", part.strip())
        if not found or found["status"] not in _MULTI_CORE_STATUS:
            return free(f"multi-core status {status!r} is neither one status nor one per target")
        name = found["target"].lower()
        if name not in targets:
            return free(f"multi-core status names {found['target']}, not a target of this group")
        per_target[name] = _MULTI_CORE_STATUS[found["status"]]
    return {"kind": "multi-core", "values": sorted(set(per_target.values())), "rule": per_target}


def shape(text: str) -> Reading | None:
    match = _SHAPE.match(normalise(text))
    if not match:
        return None
    dims = [d.strip() for d in match["dims"].split(",") if d.strip()]
    rule: dict[str, Any] = {"dims": dims}
    rest = match["rest"].strip()
    if rest:
        subject_to = _SUBJECT_TO.match(rest)
        if not subject_to:
            return None
        rule["subject_to"] = subject_to["op"]
    return {"kind": "rank", "subject": "shape", "values": [len(dims)], "rule": rule}


def conditional(text: str, subject: str) -> Reading | None:
    """``width : 当dilated_kernel_h > 1 时, width < 16383。…`` and
    ``当 dilation 不等于 (1, 1) 时，只支持 kernel=(1,1)``: a rule that holds under a condition."""
    plain = normalise(text)
    match = re.match(
        r"^(?:(?P<name>\w+) : )?当\s*(?P<when>[^时]+?)\s*时\s*,\s*(?P<then>[^。]+)。?(?P<rest>.*)$",
        plain,
    )
    if not match or "&&" in match["when"]:
        return None
    when = match["when"].replace("不等于", "!=")
    then = match["then"].strip()
    only = re.fullmatch(r"只支持\s*(?P<name>\w+)\s*=\s*(?P<value>\S+)", then)
    if only:
        return {
            "kind": "values",
            "subject": only["name"],
            "values": [only["value"]],
            "rule": {"when": when},
        }
    found = formula(then, {})
    if found["kind"] == "free-text":
        return None
    rule = {**found["rule"], "when": when}
    if match["rest"].strip():  # a pointer elsewhere; spaces only where the lines wrapped
        rule["see"] = re.sub(r"\s+", "", match["rest"])
    return {"kind": "formula", "subject": match["name"] or found["subject"], "rule": rule}


def in_words(text: str, known: Mapping[str, int]) -> list[Reading] | None:
    """Comparisons written in words, joined by 且 ("and"): ``height ∗ width < 16384 且
    height ∗ width 等于 1 或大于 8`` is two formulas (the second ``height*width = 1 or
    height*width > 8``); ``None`` unless every part reads as one."""
    plain = normalise(text).rstrip(";.。")
    parts = [p for p in re.split(r"\s*,?\s*且\s*", plain) if p]
    found = []
    for part in parts:
        either = re.fullmatch(r"(?P<lhs>.+?)\s*等于\s*(?P<a>\w+)\s*或\s*大于\s*(?P<b>\w+)", part)
        if either:
            part = f"{either['lhs']} = {either['a']} or {either['lhs']} > {either['b']}"
        one = formula(part, known)
        if one["kind"] == "free-text":
            return None
        found.append(one)
    return found if len(found) > 1 or "等于" in plain else None


def axes(head: str, body: str) -> Reading | None:
    """``做 softmax 的轴: 1,3，即 channel 和 width 方向`` (axis 3 written ``3/‑1`` where -1
    is allowed too) and ``做 hardmax 的轴: axis ∈ {−1, 1, 3} 即 …``: the axes an operator
    works along (a ``values`` limit on its ``axis``)."""
    if not re.fullmatch(r"做\s*\w+\s*的轴", head.strip()):
        return None
    values = _value_list(re.sub(r"^axis\s*∈\s*", "", body))
    return {"kind": "values", "subject": "axis", "values": values} if values else None


def scales(text: str) -> list[Reading] | None:
    """``目前仅支持宽高方向的整数倍缩放, 且缩放倍数为 2‑8 的整数倍, 如果是 (1, c, 1, 1) 则支持
    放大到 (1, c, h, w)`` (Resize): integer scales 2 to 8 along height and width, the
    exception kept in the rule."""
    match = re.fullmatch(
        r"目前仅支持宽高方向的整数倍缩放\s*,\s*且缩放倍数为\s*(?P<lo>\d+)\s*-\s*(?P<hi>\d+)\s*的整数倍"
        r"(?:\s*,\s*如果是\s*(?P<src>\([^)]*\))\s*则支持放大到\s*(?P<dst>\([^)]*\)))?",
        normalise(text),
    )
    if not match:
        return None
    values = list(range(int(match["lo"]), int(match["hi"]) + 1))
    rule: dict[str, Any] = {"integer": True}
    if match["src"]:
        rule["except_enlarging"] = {"from": match["src"], "to": match["dst"]}
    return [
        {"kind": "values", "subject": f"scale_{axis}", "values": values, "rule": rule}
        for axis in ("h", "w")
    ]


def _attribute_name(word: str, subject: str) -> str:
    """The document's ``hiddensize`` and ``projsize`` for the attributes hidden_size and
    proj_size."""
    if word.replace("_", "") == subject.replace("_", ""):
        return subject
    return re.sub(r"(?<=[a-z])size$", "_size", word)


def statement(text: str, subject: str) -> Reading | None:
    """The wording of sets, fixed values, unsupported features and absent limits."""
    plain = re.sub(r"^注\s*,\s*", "", normalise(text))  # "注, 不支持 kernel_h=1 且 kernel_w=1"
    head, _, tail = plain.rpartition(":")
    body = tail.strip() if head and not _COMPARE.search(head) else plain
    if head and re.fullmatch(r"[A-Za-z_][A-Za-z_ ]*", head.strip()):  # "num directions: 1 or 2"
        subject = head.strip().replace(" ", "_")
    along = axes(head, body) if head else None
    if along is not None:
        return along
    said = _special(head, body, subject)
    if said is not None:
        return said
    if re.fullmatch(r"(目前|当前)?(暂不支持|不支持)(设置)?", body):
        return {"kind": "unsupported", "subject": subject}
    if body.startswith("不支持 ") and _COMPARE.search(body):
        found = formula(re.sub(r"\s*且\s*", " and ", body.removeprefix("不支持 ")), {})
        if found["kind"] == "free-text":
            return found
        return {
            "kind": "formula",
            "subject": subject,
            "rule": {**found["rule"], "unsupported_when": True},
        }
    no_limit = _NO_LIMIT.search(body)
    if no_limit:
        leftover = re.sub(r"[\s,]", "", _ALIGN_HINT.sub("", body.replace(no_limit[0], "")))
        hint = _ALIGN_HINT.search(body)
        none: Reading = {
            "kind": "no-limit",
            "subject": subject,
            "rule": {"recommended_multiple_of": int(hint["n"])} if hint else {},
        }
        if re.fullmatch(r"[a-z_]+", leftover):  # "constant 无限制": for that value (Pad's mode)
            none["condition"] = {subject: [leftover]}
        elif leftover and not re.fullmatch(r"指定\w+输入的seqsize|\w+单元中的hiddensize", leftover):
            return None
        return none
    fixed = _FIXED.search(body)
    if fixed:
        return {"kind": "fixed", "subject": subject, "values": [scalar(fixed["value"])]}
    either = _OR_VALUES.match(body)
    if either:
        return {
            "kind": "values",
            "subject": subject,
            "values": [scalar(either["a"]), scalar(either["b"])],
        }
    only = _ONLY.search(body)
    if only:
        values = _value_list(only["values"])
        if values is not None:
            return {"kind": "values", "subject": subject, "values": values}
    optional = re.fullmatch(
        r"支持\s*(?P<values>[\w, ]+?)\s*(?:[两三四五六]种\s*\w*\s*模式)?\s*可选(?:,.*)?", body
    )
    if optional and _value_list(optional["values"]):  # an attribute's named options
        return {"kind": "enum", "subject": subject, "values": _value_list(optional["values"])}
    ways = re.fullmatch(r"支持\S*方式\s+(?P<values>.+)", body)
    if ways:
        return {"kind": "values", "subject": subject, "values": _value_list(ways["values"])}
    most = re.fullmatch(r"输出维度不能超过\s*(?P<n>\d+)\s*维", body)
    if most:
        return {"kind": "rank", "subject": "output", "rule": {"at_most": int(most["n"])}}
    listed = head.endswith("支持") and _value_list(body) is not None
    if listed or head.endswith("支持模式") or (head and re.fullmatch(r"-?\d+(,\s*-?\d+)*", body)):
        return {"kind": "values", "subject": subject, "values": _value_list(body)}
    return None


# The document's names for a convolution's channel counts, as its shapes name them.
_CHANNEL_NAMES = {"num_input": "input_channel", "num_output": "output_channel"}
_CHANNELS = re.compile(r"\b(?:num_input|num_output)\b")


def _special(head: str, body: str, subject: str) -> Reading | None:
    """Wordings a single attribute or feature uses."""
    # ConvTranspose: "group : 仅支持 1, 当且仅当 num_input=num_output 时支持 num_output"
    iff = re.fullmatch(
        r"仅支持\s*(?P<v>\d+)\s*,\s*当且仅当\s*(?P<when>[^时]+?)\s*时支持\s*(?P<alt>\w+)", body
    )
    if iff:
        expression = f"{subject} = {iff['v']} or ({subject} = {iff['alt']} and {iff['when']})"
        found = formula(_CHANNELS.sub(lambda m: _CHANNEL_NAMES[m[0]], expression), {})
        found["rule"]["document_names"] = {v: k for k, v in _CHANNEL_NAMES.items()}
        return found
    # PRelu: "仅支持单个标量或 C 维度系数"
    per = re.fullmatch(r"仅支持单个标量或\s*(?P<dim>[A-Z])\s*维度系数", body)
    if per:
        # the slope's forms; no model varies them
        return {"kind": "enum", "subject": subject, "values": ["scalar", f"[{per['dim']}]"]}
    # Slice: "选取切分的轴: 支持任意 0~3 轴，支持同时多轴选择"
    any_axis = re.fullmatch(
        r"支持任意\s*(?P<a>\d+)\s*~\s*(?P<b>\d+)\s*轴(?P<many>,\s*支持同时多轴选择)?", body
    )
    if any_axis:
        # Every axis of a rank-4 tensor, alone or together: no limit on the list.
        axes = list(range(int(any_axis["a"]), int(any_axis["b"]) + 1))
        return {
            "kind": "no-limit",
            "subject": subject,
            "rule": {"any_of": axes, "several_at_once": bool(any_axis["many"])},
        }
    # LSTM: "projection 时的 proj_size，projsize ∈ [0, hiddensize]"
    up_to = re.search(r"(?P<name>[a-z_]+)\s*∈\s*\[(?P<lo>-?\d+)\s*,\s*(?P<hi>[a-z_]+)\]$", body)
    if up_to and subject:
        name = _attribute_name(up_to["name"], subject)
        expression = f"{up_to['lo']} <= {name} <= {_attribute_name(up_to['hi'], subject)}"
        return formula(expression, {})
    # exSDPAttention, under FlashAttentionV2: "支持数据类型: float16"
    if head == "支持数据类型" and _value_list(body):
        return {"kind": "feature", "subject": "dtype", "values": _value_list(body)}
    # exConvStreaming: "width : 目前支持 width = 1。"
    one = re.fullmatch(
        r"(?:目前|当前)?(?:仅|只)?支持\s*(?P<name>\w+)\s*=\s*(?P<v>-?\d+)\s*。?", body
    )
    if one:
        return {"kind": "values", "subject": one["name"], "values": [int(one["v"])]}
    return None


def _value_list(text: str) -> list[Any] | None:
    """``1,2,4,8``, ``nearest 和 linear``, ``half_pixel,pytorch_half_pixel,align_corners``,
    ``[1] 和 [1,2,3]``; ``None`` when the words are not a plain list."""
    text = re.sub(r",?\s*即.*$", "", text).strip().strip("{}")
    if "[" in text:
        parts = re.findall(r"\[[^\]]*\]", text)
        rest = re.sub(r"\[[^\]]*\]|和|,|\s", "", text)
        return list(parts) if parts and not rest else None
    parts = [p.strip() for p in re.split(r",|和|/|;", text) if p.strip()]
    if not parts or not all(re.fullmatch(r"-?[\w.]+", p) for p in parts):
        return None
    return [scalar(p) for p in parts]
