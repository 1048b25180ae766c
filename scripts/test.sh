#!/usr/bin/env bash
# The whole test suite: installs what the tests need, runs every crate's
# tests (root-only namespace tests included when run as root), the Python
# package's tests, and a short bounded fuzz run of the segment parser.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# --no-fail-fast: a failing test binary does not hide the ones after it.
cargo test --workspace --release --no-fail-fast
# The Python package (PyO3): built into target/py-venv, tested with pytest.
bash scripts/python.sh
bash scripts/fuzz.sh "${FUZZ_SECONDS:-60}"
