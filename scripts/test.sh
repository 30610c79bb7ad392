#!/usr/bin/env bash
# The whole test suite, from a fresh clone: set up .venv (and nushell), then pytest.
# Extra arguments go to pytest. A run that collects no test fails (pytest exit 5).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh --with-shells
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
# The whole run (no arguments) also passes the CLI suite through the fast bash path (docs/fast-path.md):
# every e2e script starts with `eval "$(torch init bash)"`, so `torch` is the shell function, not a process.
# The restart race runs its 200 rounds in the first pass; here 50 (the function's own reconnect after each
# restart is what this pass adds), which keeps the suite ~2.5 minutes inside its 30.
if [[ $# -eq 0 ]]; then
  echo "== tests/e2e again through the fast bash path (torch init bash)"
  TORCHSH_TEST_PRELUDE='eval "$(torch init bash)"' TORCHSH_LIFECYCLE_ROUNDS=50 \
    .venv/bin/python -m pytest -q -p no:cacheprovider tests/e2e
fi
