"""No vendor-neutral module names a vendor's libraries, tools or packages, or a toolkit's own
operator (``exMatMul``, ``exGRU``: the ``ex`` prefix RKNN's toolkit names its own by).

The vendor seam (docs/architecture.md): what is a vendor's lives in its package under
``harness/vendors/<vendor>/`` (or another distribution); every other module of ``harness/``,
code, docstrings, comments and data files alike, is the same for every vendor. Each vendor
declares its own words (``Vendor.library_names``); the import-linter contract "neutral modules
import no vendor" keeps the imports apart.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers import paths

from harness.vendors import vendor_named, vendors

HARNESS = paths.ROOT / "harness"
VENDOR_PACKAGES = [p.parent for p in (HARNESS / "vendors").glob("*/__init__.py")]
SUFFIXES = (".py", ".yaml", ".json", ".md", ".txt")


def neutral_files() -> list[Path]:
    return [
        path
        for path in sorted(HARNESS.rglob("*"))
        if path.suffix in SUFFIXES
        and path.is_file()
        and not any(path.is_relative_to(package) for package in VENDOR_PACKAGES)
    ]


# A toolkit's own operator or layer: "ex" and a capital, as a word of its own (not "exp"),
# or inside a fused layer's name ("ExSwish" of "ConvExSwish").
OWN_OPERATOR = r"(?-i:[eE]x[A-Z]\w*)"


def vendor_words() -> re.Pattern[str]:
    words = sorted({word for vendor in vendors() for word in vendor.library_names}, key=len)
    alternatives = "|".join([*(re.escape(word) for word in reversed(words)), OWN_OPERATOR])
    return re.compile(rf"(?<![A-Za-z0-9])({alternatives})(?![A-Za-z0-9])", re.IGNORECASE)


def test_the_vendors_declare_their_words() -> None:
    assert vendor_named("houmo").library_names == ("tcim_lite",)
    pattern = vendor_words()
    assert all(pattern.search(word) for word in ("rknn", "rknnlite", "librknnrt", "rknn_server"))


def test_neutral_modules_name_no_vendor_library() -> None:
    pattern = vendor_words()
    found = [
        f"{path.relative_to(HARNESS.parent)}:{number}: {match[0]!r}"
        for path in neutral_files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for match in pattern.finditer(line)
    ]
    assert not found, "vendor words in neutral modules:\n" + "\n".join(found)


def test_the_check_sees_a_vendor_word() -> None:
    """The pattern finds the words however they are written, and not inside longer words."""
    pattern = vendor_words()
    hits = [m[0] for m in pattern.finditer("import rknnlite; RKNN-Toolkit2 librknnrt.so x")]
    assert hits == ["rknnlite", "RKNN-Toolkit2", "librknnrt"]
    assert not pattern.search("trknn rknnx")


def test_the_check_sees_a_toolkit_operator() -> None:
    """An ``ex`` operator or layer name is a vendor word; an ordinary word is not."""
    pattern = vendor_words()
    text = 'OPERATORS = {"exMatMul": spec}  # exGRU layers; Expand, exp, index, Exit, "ExSwish"'
    assert [m[0] for m in pattern.finditer(text)] == ["exMatMul", "exGRU", "ExSwish"]
