#!/usr/bin/env bash
# Make .venv (PyTorch 2.13.0 CPU first, so nothing pulls a CUDA build), install torchsh into it,
# and write the `torch`/`torchd` launchers. With --with-nushell also fetch nushell 0.115.1 from the
# npm registry into .tools/nu (git-ignored). Idempotent: a second run only re-checks.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -c 'import torch, sys; sys.exit(torch.__version__.split("+")[0] != "2.13.0")' 2>/dev/null; then
  .venv/bin/pip install -q torch==2.13.0
fi
.venv/bin/pip install -q -e '.[test]'
.venv/bin/python -m torchsh.install >/dev/null
if [ "${1:-}" = "--with-nushell" ] && [ ! -x .tools/nu/node_modules/@nushell/linux-x64/bin/nu ]; then
  mkdir -p .tools/nu
  npm install --silent --no-audit --no-fund --prefix .tools/nu nushell@0.115.1 >/dev/null
fi
