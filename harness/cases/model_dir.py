"""A folder of models as a case source (``suites/test_models.py --models DIR``).

Every model of the folder (``harness.modelfiles.nodetests``: ``.onnx`` files and ONNX backend
node tests) becomes a user-model case of kind ``models``: its data set feeds it and its
expected outputs are a further host reference. A model of one catalogue operator is judged on
that operator's compiled layers (its name and the layer names its declaration lists) and with
its tolerance, as the operator suites judge it; any other on the whole network. Operator
parameters given as graph inputs are frozen into constants (``harness.modelfiles.freeze``)
unless asked not to, and the case's parameters record it. A model the harness cannot make
runnable (an opset that cannot be lowered, a symbolic input shape, another domain's operators)
and a model the selection left out are not cases: they are listed with the reason (paths
relative to the folder), which the suite shows as skipped tests and the report as rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.cases.case import Case
from harness.cases.user_models import model_case
from harness.modelfiles.freeze import freeze
from harness.modelfiles.graph import graph_inputs
from harness.modelfiles.nodetests import ModelEntry, list_models, select, why_not_selected
from harness.modelfiles.prepare import (
    ModelFileError,
    PreparedModel,
    file_source,
    load_model,
    prepare,
)
from harness.models import Declarations
from harness.models.builder import OPSET, OperatorSpec
from harness.text import shown_name

KIND = "models"


@dataclass
class DirectoryCases:
    cases: list[Case] = field(default_factory=list)
    specs: dict[str, OperatorSpec] = field(default_factory=dict)
    # {"model": name, "reason": "not runnable: ..." or "not selected: ..."}, in folder order
    not_run: list[dict[str, str]] = field(default_factory=list)
    documented: dict[str, str] = field(default_factory=dict)  # case op -> its catalogue operator


def directory_cases(
    folder: Path,
    platform: str,
    models: Declarations,
    patterns: Sequence[str] = (),
    operators: Iterable[str] = (),
    freeze_parameters: bool = True,
    max_opset: int = OPSET,
) -> DirectoryCases:
    """The cases of the models of ``folder`` that ``patterns`` select (``select``); a model
    of one operator of ``operators`` takes the layer types ``models`` (the run's vendor's
    declarations) name it by; one newer than ``max_opset`` (the vendor's) is lowered."""
    found = DirectoryCases()
    operators = tuple(operators)
    entries = list_models(folder)
    chosen = {entry.path for entry in select(entries, patterns, operators)}
    for entry in entries:
        if entry.path not in chosen:
            reason = f"not selected: {why_not_selected(entry, patterns, operators)}"
            found.not_run.append({"model": entry.name, "reason": reason})
            continue
        try:
            prepared = prepared_entry(entry, freeze_parameters, max_opset)
        except ModelFileError as exc:
            reason = f"not runnable: {_relative(str(exc), folder)}"
            found.not_run.append({"model": entry.name, "reason": reason})
            continue
        ops = {node.op_type for node in prepared.model.graph.node}
        documented = next(iter(ops)) if len(ops) == 1 and ops <= set(operators) else None
        layers = models.layer_types(documented) if documented else ()
        case, specs = model_case(prepared, platform, "float16", kind=KIND, layer_types=layers)
        found.cases.append(case)
        found.specs.update(specs)
        if documented:
            found.documented[case.op] = documented
    return found


def _relative(text: str, folder: Path) -> str:
    """``text`` with the paths inside ``folder`` relative to it (no host paths in reports)."""
    for prefix in {str(folder), str(folder.resolve())}:
        text = text.replace(prefix.rstrip("/") + "/", "")
    return text


def prepared_entry(
    entry: ModelEntry, freeze_parameters: bool, max_opset: int = OPSET
) -> PreparedModel:
    model = load_model(entry.path)
    data = entry.data()
    given = {}
    if data is not None:
        names = graph_inputs(model)
        if len(data[0]) != len(names):
            raise ModelFileError(f"{entry.data_set}: {len(data[0])} input_*.pb for inputs {names}")
        given = dict(zip(names, data[0], strict=True))
    notes: list[str] = []
    if freeze_parameters:
        model, notes = freeze(model, given)
        kept = set(graph_inputs(model))
        given = {name: value for name, value in given.items() if name in kept}
    where = shown_name(str(entry.path))
    prepared = prepare(model, entry.name, where, given=given, max_opset=max_opset)
    prepared.changes = [*notes, *prepared.changes]
    prepared.source = file_source(entry.path)
    if data is not None:
        if len(data[1]) != len(prepared.output_names):
            raise ModelFileError(
                f"{entry.data_set}: {len(data[1])} output_*.pb for outputs {prepared.output_names}"
            )
        prepared.expected = data[1]
    return prepared
