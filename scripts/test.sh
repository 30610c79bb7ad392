#!/usr/bin/env bash
# The test suite, from a fresh clone: set up .venv (and nushell, zsh, fish), then pytest.
#   scripts/test.sh                everything, in two passes (below): the README's and CI's command (.ci/run)
#   scripts/test.sh --fast         the edit loop (under 4 minutes on 2 cores): tests/unit and tests/smoke (the
#                                  first hour through bash, zsh and nu, and a slice of the differential
#                                  pipelines), less what is marked `slow`
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
# What this pass adds is the transport, so it leaves out the `slow` families (doc examples, distributed
# fits, long sessions: compute the first pass ran, sent the same way as the 1,100 others), all but the
# lifecycle races (marked `fastpath`: the function's own reconnect after each restart), at 25 rounds, not
# 200. That keeps the whole suite inside its 40 minutes on 2 cores. test_replies.py chooses its callers
# itself (the client, both functions, nu, the API): it would only run again, the same.
if [[ $# -eq 0 ]]; then
  echo "== tests/e2e again through the fast bash path (torch init bash)"
  TORCHSH_TEST_PRELUDE='eval "$(torch init bash)"' TORCHSH_LIFECYCLE_ROUNDS=25 \
    "${pytest[@]}" -m "not slow or fastpath" tests/e2e --ignore=tests/e2e/test_replies.py
fi
