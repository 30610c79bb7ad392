"""Every `torch lm` command works with no network at all: a daemon started inside a network namespace with no
routes (unshare -rn: a loopback only, and down) opens, describes, tokenizes, decodes, generates and chats, with
the caller's Hugging Face settings left unset, so nothing in transformers may reach for a hub. The namespace is
checked to be really offline first (a connection to a public address fails) so the test can fail."""
import json
import os
import shutil
import subprocess
import tempfile

import pytest
from support import tinylm
from support.required import missing, require_tool

from conftest import Shell, stop_daemon

pytestmark = pytest.mark.slow  # a daemon of its own, inside a namespace, importing transformers: ~10 s

COMMANDS = r"""
set -e
python -c 'import socket; s = socket.socket(); s.settimeout(3); s.connect(("1.1.1.1", 443))' 2>/dev/null \
    && { echo "the namespace reaches the network"; exit 9; }
torch daemon start >/dev/null
m=$(torch lm open "$FOLDER")
torch lm info $m | python -c 'import json, sys; print(json.load(sys.stdin)["architecture"])'
torch lm decode $m $(torch lm tokenize $m 'hello world')
torch lm generate $m 'Why is the sky blue?' --max_new_tokens 4 --temperature 0 --json | tail -1
printf 'hello\n' | torch lm chat $m --max_new_tokens 3 --temperature 0 2>/dev/null | wc -l
c=$(torch lm chat $m --system 'Be brief.' --new)
torch lm say $c hi --max_new_tokens 3 --temperature 0 >/dev/null
torch lm messages $c
"""


def unshare_argv():
    tool = require_tool("unshare", "util-linux's unshare; as root `unshare -n` suffices")
    argv = [tool, "-n"] if os.geteuid() == 0 else [tool, "-rn"]
    if subprocess.run(argv + ["true"], capture_output=True).returncode != 0:
        missing("this kernel refuses a network namespace to %s (user namespaces off?)" % " ".join(argv))
    return argv


def test_every_lm_command_runs_in_a_network_namespace_without_routes():
    argv = unshare_argv()
    folder = tempfile.mkdtemp(prefix="tsh-net-")
    inside = Shell(os.path.join(folder, "s", "torchd.sock"), folder)
    os.mkdir(os.path.join(folder, "s"), 0o700)
    env = {k: v for k, v in inside.env.items() if not k.startswith(("HF_", "TRANSFORMERS_", "USE_HUB"))}
    env["FOLDER"] = tinylm.folder("llama")
    try:
        p = subprocess.run(argv + ["bash", "-c", COMMANDS], env=env, cwd=folder, capture_output=True, text=True,
                           timeout=180, stdin=subprocess.DEVNULL)
        assert p.returncode == 0, (p.returncode, p.stdout, p.stderr)
    finally:
        stop_daemon(inside)  # a Unix socket is a file: reachable from outside the namespace
        shutil.rmtree(folder, ignore_errors=True)
    architecture, decoded, last, lines, messages = p.stdout.strip().split("\n")
    model, tokenizer = tinylm.oracle("llama")
    assert architecture == type(model).__name__ and decoded == "hello world"
    assert json.loads(last)["completion_tokens"] >= 1 and int(lines) == 1
    assert [m["role"] for m in json.loads(messages)] == ["system", "user", "assistant"]
