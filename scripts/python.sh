#!/usr/bin/env bash
# Builds the `mplab` Python package (crates/py: PyO3 + maturin) into a
# virtual environment under target/ and runs its pytest suite. Needs
# python3 with venv and pip (installed with apt when missing and root) and
# PyPI for maturin, pandas and pytest.
#
#   bash scripts/python.sh            # build, install, test
#   target/py-venv/bin/python -c 'import mplab'   # then use it
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=target/py-venv
if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv python3-pip >/dev/null
  else
    echo "python.sh: python3 lacks venv/ensurepip; install python3-venv" >&2
    exit 1
  fi
fi
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
PY=$VENV/bin/python
# maturin's build hook runs the `maturin` program of the environment.
export PATH="$PWD/$VENV/bin:$PATH"
"$PY" -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null 2>&1 || true
"$PY" -m pip install -q --disable-pip-version-check "maturin>=1.5,<2" pandas pytest
# The native module is built in release mode in the workspace's target/.
"$PY" -m pip install -q --disable-pip-version-check --no-build-isolation --force-reinstall --no-deps ./crates/py
"$PY" -m pytest -q crates/py/tests
