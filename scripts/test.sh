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
if [[ $# -gt 0 ]]; then exec "${pytest[@]}" "$@"; fi
# The whole run (no arguments) also passes the CLI suite through the fast bash path (docs/fast-path.md):
# every e2e script starts with `eval "$(torch init bash)"`, so `torch` is the shell function, not a process.
# What this pass adds is the transport, so it leaves out the `slow` families (doc examples, distributed
# fits, long sessions: compute the first pass ran, sent the same way as the 1,100 others), all but the
# lifecycle races (marked `fastpath`: the function's own reconnect after each restart), at 25 rounds, not
# 200. test_replies.py and test_replies_files.py choose their callers themselves (the client, both functions,
# nu, the API): they would only run again, the same; nor do test_mcp_*.py, whose callers are the MCP SDK's client
# (`torch mcp` through the function is test_torch_mcp_exec.py's, which stays).
# The two passes run side by side: every test has its own daemon, socket, folders and ports, and much of a
# test's time is a daemon starting or a client waiting, so two cores finish both in about the first's time
# (the whole suite: ~44 minutes one after the other, over its 40). The MCP tests (test_mcp_*.py: the SDK's client,
# ~8 minutes with the 10^8-element fuzz) run after the fast-path pass, beside the first pass, which is the longer.
# The second pass's output follows the first's.
second=$(mktemp -d "${TMPDIR:-/tmp}/torchsh-fastpass.XXXXXX") beside=
trap 'pkill -P "$beside" 2>/dev/null || true; kill "$beside" 2>/dev/null || true; rm -rf "$second"' EXIT
# A background command of a script starts with SIGINT ignored, and every process it starts would inherit that:
# the Ctrl-C tests need it back at its default, which bash cannot do for its child (exec keeps SIG_DFL).
sigint=(.venv/bin/python -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])')
(
  fast=0 mcp=0
  TORCHSH_TEST_PRELUDE='eval "$(torch init bash)"' TORCHSH_LIFECYCLE_ROUNDS=25 \
    "${sigint[@]}" "${pytest[@]}" --basetemp="$second/tmp" -m "not slow or fastpath" tests/e2e \
    --ignore=tests/e2e/test_replies.py --ignore=tests/e2e/test_replies_files.py --ignore-glob='tests/e2e/test_mcp_*' \
    >"$second/log" 2>&1 || fast=$?
  "${sigint[@]}" "${pytest[@]}" --basetemp="$second/mcptmp" tests/e2e/test_mcp_*.py >"$second/mcplog" 2>&1 || mcp=$?
  echo "$fast $mcp" >"$second/status"
) &
beside=$!
first=0
"${pytest[@]}" --ignore-glob='tests/e2e/test_mcp_*' || first=$?
wait "$beside" || true
read -r fast mcp <"$second/status" || { fast=1 mcp=1; }
echo "== tests/e2e again through the fast bash path (torch init bash), run beside the first pass"
cat "$second/log"
echo "== tests/e2e/test_mcp_*.py (the MCP SDK's client), run beside the first pass after the fast-path pass"
cat "$second/mcplog"
echo "== first pass: exit $first; fast-path pass: exit $fast; MCP pass: exit $mcp"
if (( first != 0 )); then exit "$first"; fi
if (( fast != 0 )); then exit "$fast"; fi
exit "$mcp"
