#!/usr/bin/env bash
# The main job, from a fresh clone: set up .venv (PyTorch 2.13.0 CPU, torchsh), then run
# examples/demo.sh, which trains two models from bash (a regression and a classifier), saves a
# checkpoint and reloads it in a fresh daemon to predict. Uses a private daemon, stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PATH="$PWD/.venv/bin:$PATH"
demo_dir=$(mktemp -d "${TMPDIR:-/tmp}/torchsh-demo.XXXXXX")
export TORCHSH_SOCKET="$demo_dir/torchd.sock"
trap 'torch daemon stop >/dev/null 2>&1 || true; rm -rf "$demo_dir"' EXIT
bash examples/demo.sh
