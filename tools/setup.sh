#!/usr/bin/env bash
# The README's set-up, for a job of tox.ini's environment (tools/tox-job.sh):
#   tools/setup.sh suites|sdk-matrix   for `.venv-tox/bin/tox -- suites` (or sdk-matrix)
#   tools/setup.sh [checks]            for `.venv-tox/bin/tox`, the project's checks
# First the system parts the job needs (tools/provision.sh: installed as root on Debian or
# Ubuntu, else named with their install line, and nothing built), then tox in the clone's own
# virtual environment, .venv-tox.
#
# A virtual environment, because Debian 12's Python refuses `pip install` outside one (PEP 668,
# externally-managed-environment), as root and not, and a Python that allows it would mix tox
# into whatever else it holds; the standard library's venv, because pipx or uv would be one
# more thing to install first. tox makes the job's own environment, .tox/hil, itself.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tools/provision.sh "${1:-checks}"
# Once: a newer tox.ini `requires` is met by tox itself (its .tox/.tox environment).
if [ ! -x .venv-tox/bin/tox ]; then
    python3.11 -m venv .venv-tox
    .venv-tox/bin/python -m pip install --quiet --disable-pip-version-check 'tox>=4.37'
fi
