"""A user's first hour in Nushell with torch.nu: native values in and out, autograd across commands, a model
trained with train_step and with a short `fit` (rows as records), save and load, and errors as nu errors
with their codes, each against in-process PyTorch (the same data and loop as test_first_hour.py)."""
import json

import numpy as np
import torch
from firsthour import A, B, BATCH, EPOCHS, LR, STEPS, W, X, Y, assert_trained_like, matmul_error, python_training
from safetensors.torch import load_file

FIRST_HOUR = """
cd '%(folder)s'
let a = (torch tensor [[1.0 2.0] [3.0 4.0]])
let b = (torch full [2 2] 0.5)
torch manual_seed 7
let r = (torch randn [3 4])
torch save $r r.npy
let w = (torch tensor [1.0 -2.0 3.0] --requires_grad)
torch mul $w $w | torch sum | torch backward
let x = (torch load x.npy)
let y = (torch load y.npy)
let m = (torch nn linear 2 1)
torch nn save $m first.safetensors
let o = (torch optim sgd $m --lr %(lr)s)
let steps = (1..%(steps)d | each {|i| torch train_step $m $o $x $y --loss mse_loss })
let L = (torch data loader (torch data tensors $x $y) --batch_size %(batch)d)
let rows = (torch fit $m $o $L --loss mse_loss --epochs %(epochs)d)
torch nn save $m trained.safetensors
let m2 = (torch nn linear 2 1)
torch nn load $m2 trained.safetensors
torch save (torch forward $m2 $x) pred.pt
def caught [f: closure] { try { do $f; null } catch {|e| {msg: $e.msg, code: $e.details.code} } }
{
  sum: (torch matmul $a $b | torch sum | torch value), piped: ($a | torch add $b | torch value),
  reloaded: (torch load r.npy | torch value), grad: (torch grad $w | torch value),
  steps: $steps, rows: $rows,
  shape: (caught { torch matmul $a (torch ones [3]) }), handle: (caught { torch value tensor://nope }),
  op: (caught { torch nosuchop }), after: (torch value $a)
} | to json --raw | print
"""


def test_first_hour_in_nushell_equals_pytorch(nu, tmp_path):
    np.save(tmp_path / "x.npy", X.numpy())
    np.save(tmp_path / "y.npy", Y.numpy())
    said = json.loads(nu(FIRST_HOUR % dict(folder=tmp_path, lr=LR, steps=STEPS, batch=BATCH, epochs=EPOCHS)))

    assert said["sum"] == (A @ B).sum().item() == 10.0 and said["piped"] == (A + B).tolist()
    drawn = torch.randn(3, 4, generator=torch.Generator().manual_seed(7))
    assert torch.equal(torch.from_numpy(np.load(tmp_path / "r.npy")), drawn)
    assert torch.equal(torch.tensor(said["reloaded"]), drawn)
    assert said["grad"] == (2 * W).tolist()

    model, steps, means = python_training(load_file(tmp_path / "first.safetensors"), epochs=EPOCHS)
    assert [torch.tensor(s).item() for s in said["steps"]] == steps  # numbers, float32's value
    assert [r["epoch"] for r in said["rows"]] == list(range(1, EPOCHS + 1))
    assert [r["loss"] for r in said["rows"]] == means
    assert_trained_like(tmp_path, model)

    assert said["shape"] == {"msg": "torch matmul: " + matmul_error(), "code": "torchsh::shape_mismatch"}
    assert said["handle"]["code"] == "torchsh::bad_handle" and said["op"]["code"] == "torchsh::unknown_op"
    assert said["after"] == A.tolist()  # errors leave the daemon and its objects as they were


def test_an_uncaught_error_ends_the_script_with_its_code_and_message(nu):
    r = nu.run("torch matmul (torch ones [2 2]) (torch ones [3])\nprint after")
    assert r.code == 1 and r.out == ""
    assert "torchsh::shape_mismatch" in r.err and "torch matmul: " + matmul_error() in r.err
