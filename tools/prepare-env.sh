#!/usr/bin/env bash
# tox's extra_setup_commands (tox.ini): what the environment needs beyond its extras, each
# installed only when it is missing, so that a tox run after the first installs and prints
# nothing. The toolkit goes in without its declared pins (they cannot all be met with numpy 2
# on Python 3.11; the `simulator` extra holds what it imports). Further toolkit releases for
# the SDK-matrix tests install on first use (tests/conftest.py) or with `hil sdk install`; a
# machine that will be offline prepares them now: HIL_PREPARE_SDKS="2.3.2" tox --notest.
set -euo pipefail

toolkit=2.5.0
python - "$toolkit" <<'PY' 2>/dev/null || python -m pip install --quiet --disable-pip-version-check --no-deps "rknn-toolkit2==$toolkit"
import sys
from importlib import metadata

sys.exit(metadata.version("rknn-toolkit2") != sys.argv[1])
PY

for version in ${HIL_PREPARE_SDKS:-}; do
    hil sdk install "$version"
done
