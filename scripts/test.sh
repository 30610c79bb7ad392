#!/usr/bin/env bash
# The test suite, from a fresh clone: set up .venv (and nushell, zsh, fish), then pytest.
#   scripts/test.sh                everything, in two passes (below): the README's and CI's command (.ci/run)
#   scripts/test.sh --fast         the edit loop (under 3 minutes on 2 cores): tests/unit and the first-hour
#                                  smoke through bash, zsh and nu (tests/smoke), less what is marked `slow`
#   scripts/test.sh -m "not slow"  everything but the slow families (tests/conftest.py says which are)
# Other arguments go to pytest, after --fast too. Every run prints its 25 slowest tests. A run that
# collects no test fails: pytest's exit 5 stops this script (set -e) and is its status.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh --with-shells
pytest=(.venv/bin/python -m pytest -q -p no:cacheprovider --durations=25)
if [[ ${1:-} == --fast ]]; then
  shift
  exec "${pytest[@]}" -m "not slow" tests/unit tests/smoke "$@"
fi
"${pytest[@]}" "$@"
# The whole run (no arguments) also passes the CLI suite through the fast bash path (docs/fast-path.md):
# every e2e script starts with `eval "$(torch init bash)"`, so `torch` is the shell function, not a process.
# The restart race runs its 200 rounds in the first pass; here 50 (the function's own reconnect after each
# restart is what this pass adds), which keeps the suite ~2.5 minutes inside its 30. test_replies.py chooses
# its callers itself (the client, both functions, nu, the API): it would only run again, the same.
if [[ $# -eq 0 ]]; then
  echo "== tests/e2e again through the fast bash path (torch init bash)"
  TORCHSH_TEST_PRELUDE='eval "$(torch init bash)"' TORCHSH_LIFECYCLE_ROUNDS=50 \
    "${pytest[@]}" tests/e2e --ignore=tests/e2e/test_replies.py
fi
