"""Child bashes of a shell that ran `eval "$(torch init bash)"` keep the fast path (exported functions),
so the training idiom the docs teach, `torch scope -- bash -c "…"` per step, runs with no client
process; each child still checks the token file itself.

The proof that a command went through the fast path: PATH holds no `torch` client, so the function's
fallback (`command torch`) would fail with "command not found".
"""
import json
import os
import socket
import subprocess

import torch
import torch.nn.functional as F
from support.planted import nobody_connected, planted_fast_token
from support.required import require_tool
from safetensors.torch import load_file


INIT = 'eval "$(torch init bash)"\n'
NO_CLIENT = "PATH=/usr/bin:/bin\n"  # after the eval: bash and coreutils, no `torch` client
X = torch.tensor([[0.0], [1.0], [2.0], [3.0]])
Y = torch.tensor([[1.0], [3.0], [5.0], [7.0]])


def _model_state(sh, model):
    path = sh.tmp("state.safetensors")
    sh("torch nn save %s %s" % (model, path))
    return load_file(path)


def _handles(sh):
    return sorted(row["handle"] for row in json.loads(sh("command torch tensors --json")))


def test_a_child_bash_runs_torch_as_the_function_with_no_client_on_path(sh):
    out = sh(INIT + NO_CLIENT + "bash -c 'type -t torch; torch ones \"[2]\" | torch value'")
    assert out == "function\n[1.0,1.0]"


def test_a_child_bash_under_set_u_keeps_the_fast_path(sh):
    out = sh(INIT + NO_CLIENT + "bash -uc 'set -o pipefail; h=$(torch ones \"[2]\"); torch mul $h 3 | torch value'")
    assert out == "[3.0,3.0]"


def test_the_docs_training_idiom_keeps_the_fast_path_and_equals_pytorch(sh):
    """docs/training.md: `torch scope -- bash -c "zero_grad; forward | mse_loss | backward; step"` per step."""
    x, y = sh.put(X), sh.put(Y)
    model = sh("torch nn linear 1 1")
    start = _model_state(sh, model)
    opt = sh("torch optim sgd %s --lr 0.05 --momentum 0.9" % model)
    before = _handles(sh)
    step = "torch zero_grad $o; torch forward $m $x | torch mse_loss $y | torch backward; torch step $o"
    sh(INIT + NO_CLIENT + "m=%s o=%s x=%s y=%s\nfor i in 1 2 3 4 5 6; do torch scope -- bash -c \"%s\" || exit; done"
       % (model, opt, x, y, step))
    ref = torch.nn.Linear(1, 1)
    ref.load_state_dict(start)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.05, momentum=0.9)
    for _ in range(6):
        ref_opt.zero_grad()
        F.mse_loss(ref(X), Y).backward()
        ref_opt.step()
    got, want = _model_state(sh, model), ref.state_dict()
    assert set(got) == set(want) and all(torch.equal(got[k], want[k]) for k in want)
    assert _handles(sh) == before  # each step's scope freed its handles


def test_a_child_bash_checks_the_token_file_itself(sh):
    """The parent trusted its own folder; a child pointed at a folder others can write refuses it."""
    with planted_fast_token("tsh-ch-") as (_, shared, impostor):
        r = sh.run(INIT + "torch ones '[1]' >/dev/null\n"  # the parent's own folder is checked and cached
                   "TORCHSH_SOCKET=%s/torchd.sock bash -c 'type -t torch; torch randn \"[3]\"'" % shared)
        assert r.out.startswith("function\n")
        assert "the fast path token file %s/torchd.fast or its folder is not yours and private" % shared in r.err
        assert r.code != 0  # then the real client refused the folder too
        assert nobody_connected(impostor)  # nobody connected to the planted port


def test_a_zsh_child_keeps_the_fast_path_when_zshenv_sources_the_saved_function(sh):
    """zsh cannot export functions; docs/fast-path.md: save `torch init zsh` once, source it in ~/.zshenv."""
    zsh = require_tool("zsh")
    zdotdir = sh.tmp("zdotdir")
    os.mkdir(zdotdir)
    saved = os.path.join(zdotdir, "torchsh.zsh")
    sh("torch init zsh > %s" % saved)
    with open(os.path.join(zdotdir, ".zshenv"), "w") as f:
        f.write("source %s\n" % saved)
    script = ("torch ones '[1]' >/dev/null; path=(/usr/bin /bin)\n"  # no client on PATH from here on
              "torch scope -- zsh -c 'whence -w torch; torch ones \"[2]\" | torch value'")
    p = subprocess.run([zsh, "-c", script], env=dict(sh.env, ZDOTDIR=zdotdir), cwd=sh.folder,
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    assert (p.stdout, p.stderr, p.returncode) == ("torch: function\n[1.0,1.0]\n", "", 0)


def test_a_posix_mode_child_falls_back_to_the_client_when_the_port_is_dead(fresh_sh):
    """sh-as-bash and `bash --posix` import the exported function; a failed connect must not end them."""
    s = fresh_sh()
    s(INIT + "torch ones '[1]' >/dev/null")  # the fast path on: a token file names the port
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))  # bound, never listening: connect is refused
    try:
        port, ctok, stok = open(s.socket[:-len(".sock")] + ".fast").read().split()
        with open(s.socket[:-len(".sock")] + ".fast", "w") as f:  # as after a kill -9: a stale port
            f.write("%d %s %s\n" % (dead.getsockname()[1], ctok, stok))
        out = s(INIT + "bash --posix -c 'torch ones \"[2]\" | torch value; echo survived'")
    finally:
        dead.close()
    assert out == "[1.0,1.0]\nsurvived"
