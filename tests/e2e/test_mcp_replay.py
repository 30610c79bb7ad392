"""An agent's session through `torch mcp` replays: a model, its optimizer and a few training steps built with the
`run` tool, then the `history` tool's script (a resource, read through resources/read) run by plain python
makes the final model's parameters bit for bit the daemon's, over stdio and streamable HTTP."""
import itertools
import subprocess
import sys

import pytest
import torch

from support.history_replay import check
from support.mcpclient import RESULT_MAX, mcp, sh  # noqa: F401  (fixtures)

_SERIAL = itertools.count()
# Run after the script by plain python: its model's parameters, as a state dict the test reads back.
_SAVE_MODEL = """
import runpy, sys, torch
names = runpy.run_path(sys.argv[1], run_name="__main__")
torch.save(names[sys.argv[2]].state_dict(), sys.argv[3])
"""


def train_through_mcp(mcp, name):
    """An unseeded session an agent might run: a named model, data, Adam, three hand-written steps."""
    model = mcp.run("nn", "sequential", "linear 3 8", "relu", "linear 8 1", "--name", name).handles()[0]
    x, y = (mcp.run("randn", "16", n).handles()[0] for n in ("3", "1"))
    optimizer = mcp.run("optim", "adam", model, "--lr", "0.01").handles()[0]
    for _ in range(3):
        mcp.ok("zero_grad", optimizer)
        prediction = mcp.run("forward", model, x).handles()[0]
        mcp.ok("backward", mcp.run("mse_loss", prediction, y).handles()[0])
        mcp.ok("step", optimizer)
    return model


@pytest.mark.slow  # ~7 s per transport: a session of requests and a python process replaying it
def test_an_mcp_sessions_history_script_rebuilds_its_model_bit_for_bit_in_plain_python(sh, mcp):
    name = "net%d" % next(_SERIAL)
    train_through_mcp(mcp, name)
    got = mcp.call("history", target="@" + name)
    assert not got.is_error and got.nbytes <= RESULT_MAX and len(got.links) == 1, got.text
    assert got.links[0].startswith("torchsh://history/") and got.links[0].endswith(".py")
    script = mcp.read(got.links[0])
    assert "import torchsh" not in script and "import torch" in script
    path = sh.tmp("replay.py")
    with open(path, "w") as f:
        f.write(script)
    replayed_path = sh.tmp("replayed.pt")
    subprocess.run([sys.executable, "-I", "-c", _SAVE_MODEL, path, name, replayed_path], check=True,
                   capture_output=True, timeout=300)
    daemon_path = sh.tmp("daemon.pt")
    sh("torch nn save @%s %s" % (name, daemon_path))
    replayed = torch.load(replayed_path, weights_only=True)
    held = torch.load(daemon_path, weights_only=True)
    assert replayed.keys() == held.keys() and len(held) == 4
    for key in held:
        assert replayed[key].dtype == held[key].dtype and torch.equal(replayed[key], held[key]), key
    assert "match" in check(path)  # the script's own check agrees (sha256 of every object it made)
