"""``--op`` and ``--entry``: the operators of each platform of a run they name, as the run
configuration (``harness.plugin.configure.RunConfig``) reads them."""

from __future__ import annotations

import pytest

from harness.documented.selection import OperatorSelection, SelectionError
from harness.text import printable
from harness.vendors.base import Vendor


def selected_operators(
    config: pytest.Config, vendor: Vendor, platforms: list[str]
) -> dict[str, frozenset[str]] | None:
    """``--op``/``--entry``: each platform's operators they name; a name neither stands for,
    or one no platform of the run documents, is a usage error before any case."""
    selection = OperatorSelection(tuple(config.getoption("op")), tuple(config.getoption("entry")))
    if not selection:
        return None
    names = vendor.operator_names
    try:
        documents = vendor.documents()
        chosen = {p: selection.on_platform(documents, p, names) for p in platforms}
    except SelectionError as exc:
        raise pytest.UsageError(printable(str(exc))) from None
    if not any(chosen.values()):
        raise pytest.UsageError(
            printable(
                f"{selection.describe()}: selects no documented operator of {', '.join(platforms)}"
            )
        )
    return chosen
