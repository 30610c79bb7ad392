#!/usr/bin/env bash
# Make .venv (PyTorch 2.13.0 CPU first, so nothing pulls a CUDA build), install torchsh into it,
# and write the `torch`/`torchd` launchers. With --with-shells (the test set-up) also fetch nushell
# 0.115.1 from the npm registry into .tools/nu (git-ignored) and, where we are root and apt-get
# works, zsh and fish for the completion smoke tests and Debian's openssh-server for the ssh context
# tests (tests/support/sshd.py starts a throwaway sshd on 127.0.0.1); their tests skip, saying why, without them.
# Idempotent: a second run only re-checks.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -c 'import torch, sys; sys.exit(torch.__version__.split("+")[0] != "2.13.0")' 2>/dev/null; then
  # PyPI's default Linux wheel of torch is the CUDA build (GBs). For the CPU build elsewhere:
  # TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu scripts/bootstrap.sh (this machine has it locally).
  .venv/bin/pip install -q torch==2.13.0 ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
fi
# torch named again: the vision extra's torchvision must be the one built for this torch, never a reason
# for pip to replace it (an unpinned resolve picks the newest torchvision and the torch it needs).
TORCH_PIN=$(.venv/bin/python -c 'import torch; print(torch.__version__.split("+")[0])')
.venv/bin/pip install -q -e '.[test]' "torch==$TORCH_PIN"
.venv/bin/python -m torchsh.install >/dev/null
if [ "${1:-}" = "--with-shells" ]; then
  if [ ! -x .tools/nu/node_modules/@nushell/linux-x64/bin/nu ]; then
    mkdir -p .tools/nu
    npm install --silent --no-audit --no-fund --prefix .tools/nu nushell@0.115.1 >/dev/null
  fi
  if { ! command -v zsh || ! command -v fish; } >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get install -y -qq zsh fish >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq zsh fish; } >/dev/null 2>&1) \
      || echo "bootstrap: zsh/fish not installed; their completion smoke tests will skip" >&2
  fi
  if ! command -v curl >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then  # the pipelines' V2 leg
    (apt-get install -y -qq curl >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq curl; } >/dev/null 2>&1) \
      || echo "bootstrap: curl not installed; the pipeline tests will fail in CI" >&2
  fi
  if [ ! -x /usr/sbin/sshd ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get install -y -qq openssh-server >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq openssh-server; } >/dev/null 2>&1) \
      || echo "bootstrap: openssh-server not installed; the ssh context tests will skip" >&2
  fi
fi
