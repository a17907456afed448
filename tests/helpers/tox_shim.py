"""A ``tox`` command for tests that run what the docs write (``tox -- suites ...``): the tox
job itself (tools/tox-job.sh) in this environment, with ``HIL_RESULTS`` and a relative
``--junitxml`` taken from the caller's folder, as tox run there would."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.helpers import paths

SCRIPT = """#!/usr/bin/env bash
[ "$1" = -- ] && shift
results=${HIL_RESULTS:-results}
case $results in /*) ;; *) results=$PWD/$results ;; esac
args=()
for arg in "$@"; do
    case $arg in --junitxml=/*) ;; --junitxml=*) arg=--junitxml=$PWD/${arg#--junitxml=} ;; esac
    args+=("$arg")
done
cd %s && HIL_RESULTS=$results exec bash tools/tox-job.sh "${args[@]}"
"""


def tox_env(folder: Path) -> dict[str, str]:
    """The environment of a shell that finds this ``tox`` (made in ``folder``), this
    environment's ``hil`` and ``pytest``, and this checkout's harness; with the tox job's own
    defaults (no ``CI``, the shipped known issues)."""
    shim = folder / "tox"
    shim.write_text(SCRIPT % paths.ROOT)
    shim.chmod(0o755)
    env = {**os.environ, "PYTHONPATH": str(paths.ROOT)}
    env["PATH"] = os.pathsep.join([str(folder), str(Path(sys.executable).parent), env["PATH"]])
    for name in ("CI", "HIL_KNOWN_ISSUES", "HIL_RESULTS"):
        env.pop(name, None)
    return env
