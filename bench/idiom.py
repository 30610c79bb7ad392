"""The training idiom the docs teach, per step, through the fast path a child bash inherits.

docs/training.md runs each step as `torch scope -- bash -c "torch zero_grad $o; torch forward $m $x |
torch mse_loss $y | torch backward; torch step $o"`. After `eval "$(torch init bash)"` the child bash
imports the exported `torch` function, so its five commands take the fast path too. Same run, same
tiny model (the docs' regression: Linear(1,1), 4 points, SGD with momentum):
  - the idiom, fast path inherited (the row with the target)
  - the idiom with the function not exported (the child's commands run the `torch` launcher, a bash
    process each), and with no `torch init bash` at all
  - the five commands with `scope begin/end` in the same shell, fast path
  - `torch train_step` from bash, fast path
each against the same loop in this process (opt.zero_grad(); F.mse_loss(model(x), y).backward();
opt.step()), in alternating rounds; bash steps are timed inside bash with $EPOCHREALTIME.
"""
import torch
import torch.nn.functional as F

from bench.common import row
from bench.training import bash_step_times, python_step_times, rounds

IDIOM_TARGET_MS = 15.0


def run(daemon, quick=False):
    x = daemon.cli("tensor", "[[0.0],[1.0],[2.0],[3.0]]")
    y = daemon.cli("tensor", "[[1.0],[3.0],[5.0],[7.0]]")
    m = daemon.cli("nn", "linear", "1", "1")
    o = daemon.cli("optim", "sgd", m, "--lr", "0.01", "--momentum", "0.9")
    daemon.cli("init", "bash")  # turns the daemon's fast path on (a running daemon answers `init`)
    ref_model = torch.nn.Linear(1, 1)
    ref_opt = torch.optim.SGD(ref_model.parameters(), lr=0.01, momentum=0.9)
    tx, ty = torch.tensor([[0.0], [1.0], [2.0], [3.0]]), torch.tensor([[1.0], [3.0], [5.0], [7.0]])
    steps, n_rounds = (10, 2) if quick else (30, 4)
    five = "torch zero_grad %s; torch forward %s %s | torch mse_loss %s | torch backward; torch step %s" % (
        o, m, x, y, o)
    idiom = 'torch scope -- bash -c "%s"' % five
    same_shell = "{ export TORCHSH_SCOPE=$(torch scope begin); %s; torch scope end; unset TORCHSH_SCOPE; }" % five
    cases = [
        ("idiom `torch scope -- bash -c \"5 commands\"` per step, fast path inherited",
         lambda: bash_step_times(daemon, idiom, steps, fast=True), IDIOM_TARGET_MS),
        ("idiom, `torch init bash` not exported (the child runs the launcher)",
         lambda: bash_step_times(daemon, "export -fn torch; " + idiom, max(3, steps // 3), fast=True), None),
        ("idiom, no `torch init bash` (the launcher, a block form's command waited on by bash)",
         lambda: bash_step_times(daemon, idiom, max(3, steps // 3)), None),
        ("5 commands with `scope begin/end` in the same shell, fast path",
         lambda: bash_step_times(daemon, same_shell, steps, fast=True), None),
        ("`torch train_step` from bash, fast path",
         lambda: bash_step_times(daemon, "torch train_step %s %s %s %s" % (m, o, x, y), steps * 2, fast=True), None),
    ]
    rows = []
    for name, subject, target in cases:
        subj, refs, noise = rounds(subject, lambda: python_step_times(ref_model, ref_opt, tx, ty, F.mse_loss,
                                                                      steps * 20), n_rounds)
        r = row("training idiom: " + name, subj, "in-process Python loop", refs, noise=noise)
        if target is not None:
            r.update(target="<= %g ms" % target, met=r["median_ms"] <= target)
        rows.append(r)
    return rows

