"""``python -m harness.vendors.rknn.documents.operator_list``: regenerate the catalogue YAML.

    python -m harness.vendors.rknn.documents.operator_list [TEXT ...] [--check]

Each TEXT (default: every ``docs/rknn-operator-list/V*.txt``) becomes
``harness/vendors/rknn/data/operator-list/<version>/``; ``--check`` writes nothing and exits 1
when a committed file differs from what the text and the overrides make.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from harness.vendors.rknn.documents.operator_list.committed import DATA_DIR, OVERRIDES, TEXT_DIR
from harness.vendors.rknn.documents.operator_list.extract import (
    dump,
    extract,
    load_overrides,
    version_of,
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.vendors.rknn.documents.operator_list")
    parser.add_argument("texts", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    overrides = load_overrides(OVERRIDES)
    stale = []
    for path in args.texts or sorted(TEXT_DIR.glob("V*.txt")):
        text = path.read_text(encoding="utf-8")
        folder = DATA_DIR / version_of(text)
        for name, document in extract(text, overrides).items():
            target = folder / name
            content = dump(document)
            if args.check:
                if not target.exists() or target.read_text(encoding="utf-8") != content:
                    stale.append(target)
                continue
            folder.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
    for target in stale:
        print(f"{target}: differs from what the extractor makes", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
