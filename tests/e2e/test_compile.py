"""`--compile` (train/compiled/steps.py): `fit --compile` and `train_step --compile` equal PyTorch's eager loop
within the documented tolerance, compile once per model and shape, never recompile when a scheduler
changes the lr, keep checkpoints loadable by an uncompiled run, say so in run.json, and refuse with
not_supported (and the fix) where they cannot run: no C++ compiler, --autocast, a distributed fit.

Each compile takes seconds on 2 cores: the tests share one small model shape, so after the first the
daemon's compile cache serves them."""
import json
import os

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from torch.utils.data import DataLoader, TensorDataset

pytestmark = pytest.mark.slow

X = torch.randn(50, 4, generator=torch.Generator().manual_seed(1))
Y = torch.randint(0, 3, (50,), generator=torch.Generator().manual_seed(2))
MODEL = "torch nn sequential 'linear 4 16' relu 'linear 16 3'"
TOLERANCE = 1e-5  # docs/training.md#compile: compiled weights within this of eager (float32)


def python_fit(weights, epochs):
    """PyTorch's eager loop: SGD with momentum, StepLR halving the lr every epoch."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    model.load_state_dict(weights)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    loader = DataLoader(TensorDataset(X, Y), batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(11))
    for _ in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        sched.step()
    return model.state_dict()


def compiled_fit(sh, flags):
    """`torch fit --compile` with a StepLR: (first weights, last weights, model handle, opt handle)."""
    first, last = sh.tmp("first.safetensors"), sh.tmp("last.safetensors")
    out = sh("m=$(%s); torch nn save $m %s; o=$(torch optim sgd $m --lr 0.05 --momentum 0.9); "
             "s=$(torch sched step_lr $o --step_size 1 --gamma 0.5); "
             "L=$(torch data loader $(torch data tensors %s %s) --batch_size 8 --shuffle --seed 11); "
             "torch fit $m $o $L --loss cross_entropy --sched $s --compile %s >/dev/null; torch nn save $m %s; "
             "echo $m $o" % (MODEL, first, sh.put(X), sh.put(Y), flags, last))
    model, opt = out.split()
    return load_file(first), load_file(last), model, opt


def compiled_rows(sh, *handles):
    return [r for r in json.loads(sh("torch daemon status --json"))["compiled"] if r["handle"] in handles]


def test_fit_compile_equals_eager_pytorch_within_tolerance_and_never_recompiles_as_the_lr_changes(sh):
    log = sh.tmp("run")
    first, last, model, opt = compiled_fit(sh, "--epochs 3 --log %s" % log)
    want = python_fit(first, 3)
    for k in want:
        assert torch.allclose(last[k], want[k], rtol=0, atol=TOLERANCE), k
    rows = compiled_rows(sh, model, opt)
    # forward+loss for the batches of 8 and the last batch of 2, and the optimizer step: each compiled once
    assert sorted(r["signature"] for r in rows) == ["", "2x4:float32 2:int64", "8x4:float32 8:int64"]
    assert [r["recompiles"] for r in rows] == [0, 0, 0]
    # 7 steps an epoch at lr 0.05, 0.025, 0.0125; the first, which makes the momentum buffers, runs eagerly
    assert [r["calls"] for r in rows if r["signature"] == ""] == [20]
    with open(os.path.join(log, "run.json")) as f:
        record = json.load(f)["compile"]
    assert record["bit_exact"] is False and record["max_drift_measured"]


def test_a_compiled_runs_checkpoint_resumes_in_an_eager_run(sh):
    log = sh.tmp("run")
    compiled_fit(sh, "--epochs 1 --log %s" % log)
    out = sh("m=$(%s); o=$(torch optim sgd $m --lr 0.05 --momentum 0.9); "
             "L=$(torch data loader $(torch data tensors %s %s) --batch_size 8 --shuffle --seed 11); "
             "torch fit $m $o $L --loss cross_entropy --epochs 2 --log %s --resume auto --json"
             % (MODEL, sh.put(X), sh.put(Y), log))
    assert [json.loads(line)["epoch"] for line in out.splitlines()] == [2]


def test_train_step_compile_reuses_its_compiled_step_across_commands(sh):
    x, y = sh.put(X[:8]), sh.put(Y[:8])
    first = sh.tmp("first.safetensors")
    out = sh("m=$(%s); torch nn save $m %s; o=$(torch optim adam $m --lr 0.01); "
             "torch train_step $m $o %s %s --loss cross_entropy --compile; "
             "torch train_step $m $o %s %s --loss cross_entropy --compile; echo $m $o" % (MODEL, first, x, y, x, y))
    loss1, loss2, model, opt = out.split()
    net = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    net.load_state_dict(load_file(first))
    adam = torch.optim.Adam(net.parameters(), lr=0.01)
    for got in (loss1, loss2):
        adam.zero_grad()
        loss = F.cross_entropy(net(X[:8]), Y[:8])
        loss.backward()
        adam.step()
        assert abs(float(got) - loss.item()) <= TOLERANCE
    rows = compiled_rows(sh, model, opt)
    # the forward+loss twice; Adam's step once (its first step, which makes its moments, runs eagerly)
    assert sorted((r["calls"], r["recompiles"]) for r in rows) == [(1, 0), (2, 0)]


def test_distributions_still_check_their_arguments_after_a_compile(sh):
    """torch._dynamo turns PyTorch's process-wide validate_args default off at its first compile."""
    x, y = sh.put(X[:8]), sh.put(Y[:8])
    sh("m=$(%s); o=$(torch optim sgd $m --lr 0.1); torch train_step $m $o %s %s --loss cross_entropy --compile "
       ">/dev/null" % (MODEL, x, y))
    r = sh.run("torch dist normal 0 -1")
    assert r.code == 2 and "constraint GreaterThan" in r.err and "[bad_argument]" in r.err, r.err
    r = sh.run("torch dist log_prob $(torch dist uniform 0 1) 2")
    assert r.code == 4 and "support" in r.err, r.err


def test_compile_is_refused_with_the_fix_when_the_daemon_finds_no_cxx_compiler(fresh_sh):
    sh = fresh_sh(start=False)
    r = sh.run("CXX=/nonexistent/g++ torch daemon start >/dev/null; m=$(torch nn linear 4 3); "
               "torch train_step $m $(torch optim sgd $m) $(torch randn 8 4) $(torch randn 8 3) --compile")
    assert r.code == 2 and "[not_supported]" in r.err and "apt install g++" in r.err and "CXX" in r.err, r.err


def test_compile_refuses_autocast_and_a_distributed_fit_before_anything_runs(sh):
    setup = ("m=$(torch nn linear 4 3); o=$(torch optim sgd $m); "
             "L=$(torch data loader $(torch data tensors $(torch randn 8 4) $(torch randn 8 3))); ")
    for flags in ("--autocast bf16", "--nproc_per_node 2"):
        r = sh.run(setup + "torch fit $m $o $L --loss mse_loss --compile " + flags)
        assert r.code == 2 and "[not_supported]" in r.err, r.err
    r = sh.run(setup + "torch train_step $m $o $(torch randn 8 4) $(torch randn 8 3) --compile --autocast bf16")
    assert r.code == 2 and "[not_supported]" in r.err, r.err


def _compiled_code(folder):
    """{path: mtime} of what inductor wrote in the daemon's folder (its locks aside)."""
    root = os.path.join(folder, "torchd.compile")
    return {os.path.join(d, f): os.stat(os.path.join(d, f)).st_mtime_ns
            for d, _, files in os.walk(root) for f in files if not f.endswith(".lock")}


def test_a_restarted_daemon_reuses_its_folders_compiled_code_with_the_same_results(fresh_sh):
    """Nothing new is written when a restarted daemon compiles the same model and shapes (a miss would
    write new FX-graph and AOTAutograd cache entries), and its steps give the first daemon's losses."""
    sh = fresh_sh()
    weights, x, y = sh.tmp("w.safetensors"), sh.tmp("x.pt"), sh.tmp("y.pt")
    torch.save(X[:8].clone(), x)
    torch.save(Y[:8].clone(), y)
    sh("torch nn save $(%s) %s" % (MODEL, weights))
    steps = ("m=$(%s); torch nn load $m %s >/dev/null; o=$(torch optim adam $m --lr 0.01); x=$(torch load %s); "
             "y=$(torch load %s); for i in 1 2 3; do torch train_step $m $o $x $y --loss cross_entropy --compile; "
             "done" % (MODEL, weights, x, y))
    first = sh(steps).split()
    written = _compiled_code(sh.folder)
    sh("torch daemon stop >/dev/null; torch daemon start >/dev/null")
    assert sh(steps).split() == first
    assert _compiled_code(sh.folder) == written and written
