"""A user's first hour through real bash (the client, then the fast function) and real zsh (its function):
tensors, a pipe, a seeded draw, autograd across commands, save and load, errors with their codes, and a
model trained with train_step and with a short `fit`, each against in-process PyTorch.
The same scripts run in each shell; `scripts/test.sh --fast` runs them on every edit (tests/conftest.py).
"""
import json
import subprocess

import numpy as np
import pytest
import torch
from firsthour import A, B, BATCH, EPOCHS, LR, STEPS, W, X, Y, assert_trained_like, matmul_error, python_training
from support.required import require_tool
from safetensors.torch import load_file

SHELLS = ["bash", "bash function", "zsh function"]

# Plain POSIX-shell words, so that bash and zsh run the same text; results go to files and `key value` lines.
TENSORS = """
a=$(torch tensor '[[1.0,2.0],[3.0,4.0]]'); b=$(torch full '[2,2]' 0.5)
echo "sum $(torch matmul $a $b | torch sum | torch value)"
echo "piped $(echo $a | torch add $b | torch value)"
torch manual_seed 7; r=$(torch randn 3 4); torch save $r r.npy
echo "reloaded $(torch load r.npy | torch value)"
w=$(torch tensor '[1.0,-2.0,3.0]' --requires_grad)
torch mul $w $w | torch sum | torch backward
torch save $(torch grad $w) grad.pt
torch matmul $a $(torch ones 3) 2> shape.err; echo "shape_status $?"
torch value tensor://nope 2> handle.err; echo "handle_status $?"
torch nosuchop 2> op.err; echo "op_status $?"
echo "after $(torch value $a)"
"""
MODEL = """
x=$(torch load x.npy); y=$(torch load y.npy)
m=$(torch nn linear 2 1); torch nn save $m first.safetensors; o=$(torch optim sgd $m --lr %s)
for i in %s; do torch train_step $m $o $x $y --loss mse_loss; done > steps.txt
""" % (LR, " ".join(str(i) for i in range(STEPS)))
TRAINED = """
torch nn save $m trained.safetensors
m2=$(torch nn linear 2 1); torch nn load $m2 trained.safetensors; torch save $(torch forward $m2 $x) pred.pt
"""
FIT = """
L=$(torch data loader $(torch data tensors $x $y) --batch_size %d)
torch fit $m $o $L --loss mse_loss --epochs %d --json > rows.jsonl 2> fit.err
""" % (BATCH, EPOCHS)


def run_first_hour(sh, folder, shell, script):
    """Run `script` in `shell` from `folder` (x.npy and y.npy there); its `key value` lines as a dict.
    The first line it prints says what `torch` is there: the client's file, or the shell's function."""
    if shell == "bash":
        argv, which, what = ["bash", "-c"], "type -t torch", "file"
    elif shell == "bash function":
        argv, which, what = ["bash", "-c"], 'eval "$(torch init bash)"\ntype -t torch', "function"
    else:
        argv, which = [require_tool("zsh"), "-f", "-c"], 'eval "$(torch init zsh)"\nwhence -w torch'
        what = "torch: function"
    np.save(folder / "x.npy", X.numpy())
    np.save(folder / "y.npy", Y.numpy())
    p = subprocess.run(argv + [which + "\n" + script], env=sh.env, cwd=folder, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=300)
    assert p.returncode == 0, p.stderr
    first, *lines = p.stdout.splitlines()
    assert first == what
    return dict(line.split(" ", 1) for line in lines)


def error_line(folder, name):
    lines = (folder / name).read_text().splitlines()
    assert len(lines) == 1, lines  # one line, never a traceback
    return lines[0]


@pytest.mark.parametrize("shell", SHELLS)
def test_tensors_autograd_files_and_errors_equal_pytorch(sh, tmp_path, shell):
    said = run_first_hour(sh, tmp_path, shell, TENSORS)
    assert float(said["sum"]) == (A @ B).sum().item() == 10.0
    assert json.loads(said["piped"]) == (A + B).tolist()
    drawn = torch.randn(3, 4, generator=torch.Generator().manual_seed(7))  # the seeded stream, bit for bit
    assert torch.equal(torch.from_numpy(np.load(tmp_path / "r.npy")), drawn)
    assert torch.equal(torch.tensor(json.loads(said["reloaded"])), drawn)
    assert torch.equal(torch.load(tmp_path / "grad.pt", weights_only=True), 2 * W)  # d/dw sum(w*w)

    shape = error_line(tmp_path, "shape.err")
    assert said["shape_status"] == "4" and shape.startswith("torch: matmul: ") and shape.endswith("[shape_mismatch]")
    assert matmul_error() in shape  # PyTorch's own words
    assert said["handle_status"] == "3" and error_line(tmp_path, "handle.err").endswith("[bad_handle]")
    assert said["op_status"] == "2" and error_line(tmp_path, "op.err").endswith("[unknown_op]")
    assert json.loads(said["after"]) == A.tolist()  # errors leave the daemon and its objects as they were


@pytest.mark.parametrize("shell", SHELLS)
def test_train_step_then_save_and_load_equal_pytorch(sh, tmp_path, shell):
    run_first_hour(sh, tmp_path, shell, MODEL + TRAINED)
    model, steps, _ = python_training(load_file(tmp_path / "first.safetensors"), epochs=0)
    printed = (tmp_path / "steps.txt").read_text().split()  # float32's shortest text: it reads back exactly
    assert [torch.tensor(float(s)).item() for s in printed] == steps
    assert_trained_like(tmp_path, model)


@pytest.mark.parametrize("shell", SHELLS)
def test_a_short_fit_after_train_step_equals_pytorch(sh, tmp_path, shell):
    run_first_hour(sh, tmp_path, shell, MODEL + FIT + TRAINED)
    model, _, means = python_training(load_file(tmp_path / "first.safetensors"), epochs=EPOCHS)
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in rows] == list(range(1, EPOCHS + 1)) and [r["loss"] for r in rows] == means
    assert_trained_like(tmp_path, model)
