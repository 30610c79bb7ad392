#!/usr/bin/env bash
# The whole test suite, from a fresh clone: set up .venv (and nushell), then pytest.
# Extra arguments go to pytest. A run that collects no test fails (pytest exit 5).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh --with-nushell
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
