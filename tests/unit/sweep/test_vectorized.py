"""sweep/vectorized.py trains trials of one architecture together: each trial's rows, final weights and
optimizer state equal run_fit of that trial alone (the oracle) within 1e-6; the optimizer step over the stack
is PyTorch's bit for bit; a pruned trial leaves the stack without changing the others; a trial's log folder
holds run_fit's files and checkpoints that restore; unsupported() says why trials cannot train together."""
import json
import os

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import TensorDataset

from torchsh.data.loader import Loader
from torchsh.models import checkpoint
from torchsh.sweep import vectorized, vectorized_optim
from torchsh.train.fit import run_fit
from torchsh.train.plan import FitPlan

TRIALS = 4
_g = torch.Generator().manual_seed(0)
X, Y = torch.randn(200, 8, generator=_g), torch.randint(0, 3, (200,), generator=_g)
VX, VY = torch.randn(64, 8, generator=_g), torch.randint(0, 3, (64,), generator=_g)

OPTIMIZERS = {  # trial k's optimizer: every option that may differ differs
    "sgd": lambda ps, k: torch.optim.SGD(ps, lr=0.05 * (k + 1)),
    "sgd_momentum": lambda ps, k: torch.optim.SGD(ps, lr=0.05 * (k + 1), momentum=0.5 + 0.1 * k,
                                                  dampening=0.1 * k, weight_decay=1e-3 * k),
    "sgd_nesterov": lambda ps, k: torch.optim.SGD(ps, lr=0.05 * (k + 1), momentum=0.6 + 0.1 * k,
                                                  weight_decay=1e-3 * k, nesterov=True),
    "adam": lambda ps, k: torch.optim.Adam(ps, lr=1e-3 * (k + 1), betas=(0.9 - 0.05 * k, 0.999 - 0.001 * k),
                                           eps=1e-8 * (k + 1), weight_decay=1e-2 * k),
    "adamw": lambda ps, k: torch.optim.AdamW(ps, lr=1e-3 * (k + 1), betas=(0.9 - 0.05 * k, 0.99),
                                             weight_decay=1e-2 * (k + 1)),
}
UNEVEN = {"sgd_uneven": lambda ps, k: torch.optim.SGD(ps, lr=[0.01, 0.3, 0.2, 0.5][k], momentum=0.9)}


def mlp(k, dropout=False, hidden=16):
    torch.manual_seed(k)
    layers = [torch.nn.Linear(8, hidden), torch.nn.ReLU()] + ([torch.nn.Dropout(0.1)] if dropout else [])
    return torch.nn.Sequential(*layers, torch.nn.Linear(hidden, 3))


def loaders():
    return Loader(TensorDataset(X, Y), 16, shuffle=True, seed=5), Loader(TensorDataset(VX, VY), 32)


def plan(k, optimizer, data, epochs=3, log=None, model=None, **options):
    model = model or mlp(k)
    make = {**OPTIMIZERS, **UNEVEN}[optimizer]
    return FitPlan(model, make(model.parameters(), k), data[0], F.cross_entropy, epochs=epochs,
                   val=data[1], metrics=("accuracy",), log=log, **options)


def alone(k, optimizer, epochs=3, should_stop=lambda: False, **options):
    single = plan(k, optimizer, loaders(), epochs, **options)
    return single, run_fit(None, single, lambda event: None, should_stop)


def together(optimizer, keep=lambda i, row: True, should_stop=lambda: False, logs=None, events=None, **options):
    data = loaders()
    plans = [plan(k, optimizer, data, log=logs and logs[k], **options) for k in range(TRIALS)]
    assert vectorized.unsupported(plans) is None
    report = (lambda i, event: events.append((i, event))) if events is not None else (lambda i, event: None)
    return plans, vectorized.run_together(plans, report, should_stop, keep)


def differences(plan_a, result_a, plan_b, result_b):
    """The largest difference between two runs' epoch rows, weights and optimizer state."""
    rows = [abs(a[key] - b[key]) for a, b in zip(result_a.rows, result_b.rows, strict=True) for key in a
            if key not in ("kind", "seconds")]
    weights = [(a - b).abs().max().item() for a, b in zip(plan_a.model.parameters(), plan_b.model.parameters())]
    state_a, state_b = plan_a.optimizer.state_dict()["state"], plan_b.optimizer.state_dict()["state"]
    assert state_a.keys() == state_b.keys()
    state = [(state_a[p][key] - value).abs().max().item() for p in state_b for key, value in state_b[p].items()]
    return max(rows + weights + state)


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_each_trial_equals_its_run_alone(optimizer):
    plans, results = together(optimizer)
    for k in range(TRIALS):
        single, result = alone(k, optimizer)
        assert (results[k].reason, results[k].epoch, results[k].step) == ("done", 3, 39)
        assert differences(plans[k], results[k], single, result) <= 1e-6


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_the_stacked_optimizer_step_is_pytorchs_bit_for_bit(optimizer):
    models = [mlp(k) for k in range(TRIALS)]
    optimizers = [OPTIMIZERS[optimizer](m.parameters(), k) for k, m in enumerate(models)]
    stack = {n: torch.stack([dict(m.named_parameters())[n].detach() for m in models])
             for n, _ in models[0].named_parameters()}
    step = vectorized_optim.stacked(optimizers)
    for _ in range(4):
        grads = {n: torch.randn_like(p) for n, p in stack.items()}
        for k, (m, o) in enumerate(zip(models, optimizers)):
            for n, p in m.named_parameters():
                p.grad = grads[n][k].clone()
            o.step()
        step.step(stack, grads)
    for k, m in enumerate(models):
        assert all(torch.equal(stack[n][k], p) for n, p in m.named_parameters())


def test_a_pruned_trial_leaves_the_stack_and_the_others_still_equal_their_runs_alone():
    events = []
    plans, results = together("adam", keep=lambda i, row: not (i == 1 and row["epoch"] == 1), events=events)
    assert (results[1].reason, results[1].epoch, len(results[1].rows)) == ("pruned", 1, 1)
    assert (1, {"event": "stopped", "epoch": 1, "step": 13, "reason": "pruned"}) in events
    assert {e["trials"] for i, e in events if e["event"] == "batch" and e["epoch"] > 1} == {TRIALS - 1}
    single, result = alone(1, "adam", epochs=1)
    assert differences(plans[1], results[1], single, result) <= 1e-6
    for k in (0, 2, 3):
        single, result = alone(k, "adam")
        assert results[k].reason == "done" and differences(plans[k], results[k], single, result) <= 1e-6


def stop_after(steps):
    polls = iter(range(1, 10 ** 6))
    return lambda: next(polls) >= steps


@pytest.mark.parametrize("stop, reason", [(dict(should_stop=stop_after(20)), "stopped"),
                                          (dict(max_steps=20), "max_steps")])
def test_a_stop_ends_every_trial_at_that_step_as_a_run_alone(stop, reason):
    plans, results = together("sgd_momentum", **stop)
    for k in range(TRIALS):
        assert (results[k].reason, results[k].epoch, results[k].step) == (reason, 2, 20)
        if "should_stop" in stop:
            stop = dict(should_stop=stop_after(20))
        single, result = alone(k, "sgd_momentum", **stop)
        assert differences(plans[k], results[k], single, result) <= 1e-6


def test_trials_that_stop_early_leave_the_stack_and_each_equals_its_run_alone():
    events = []
    plans, results = together("sgd_uneven", events=events, epochs=6, patience=1)
    assert [(r.reason, r.epoch) for r in results] == [("early_stop", 5), ("early_stop", 4), ("early_stop", 4),
                                                      ("early_stop", 2)]
    trials = {e["epoch"]: e["trials"] for i, e in events if e["event"] == "batch"}
    assert trials == {1: 4, 2: 4, 3: 3, 4: 3, 5: 1}
    for k in range(TRIALS):
        single, result = alone(k, "sgd_uneven", epochs=6, patience=1)
        assert result.reason == "early_stop" and differences(plans[k], results[k], single, result) <= 1e-6


def test_a_trials_log_folder_holds_its_rows_and_checkpoints_that_restore(tmp_path):
    logs = [str(tmp_path / str(k)) for k in range(TRIALS)]
    plans, results = together("adamw", logs=logs)
    for k in range(TRIALS):
        assert os.path.exists(os.path.join(logs[k], "run.json"))
        with open(os.path.join(logs[k], "metrics.jsonl")) as f:
            rows = [json.loads(line) for line in f]
        assert [r for r in rows if r["kind"] == "epoch"] == results[k].rows
        assert [r["step"] for r in rows if r["kind"] == "step"] == list(range(1, 40))
        fresh = plan(k, "adamw", loaders(), model=mlp(99))
        checkpoint.restore(os.path.join(logs[k], "last.safetensors"), fresh.model, fresh.optimizer)
        assert differences(fresh, results[k], plans[k], results[k]) == 0
        assert os.path.exists(os.path.join(logs[k], "best.safetensors"))


class Noisy(torch.nn.Module):
    """A model that draws random numbers no module type gives away."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x + torch.randn_like(x))


def wider(p, hidden):
    p.model = mlp(0, hidden=hidden)
    p.optimizer = torch.optim.Adam(p.model.parameters())


@pytest.mark.parametrize("optimizer", ["sgd_nesterov", "adam"])
def test_fit_resumes_a_trials_last_checkpoint_as_its_run_alone_would_go_on(tmp_path, optimizer):
    logs = [str(tmp_path / str(k)) for k in range(TRIALS)]
    together(optimizer, logs=logs)
    resumed = plan(2, optimizer, loaders(), epochs=4, log=logs[2], model=mlp(99))
    resumed.resume = "auto"
    result = run_fit(None, resumed, lambda event: None, lambda: False)
    single, result_alone = alone(2, optimizer, epochs=4)
    assert [r["epoch"] for r in result.rows] == [4]
    assert differences(resumed, result, single, type(result_alone)(rows=result_alone.rows[3:])) <= 1e-6


@pytest.mark.parametrize("change, reason", [
    (lambda p, k: p.model.append(torch.nn.Dropout(0.1)), "Dropout draws random numbers"),
    (lambda p, k: setattr(p, "model", Noisy(p.model)), "the model's forward draws random numbers"),
    (lambda p, k: wider(p, 16 + k), "the trials' models differ in shape"),
    (lambda p, k: setattr(p, "optimizer", torch.optim.Adagrad(p.model.parameters())),
     "Adagrad has no vectorised step"),
    (lambda p, k: setattr(p, "sched", torch.optim.lr_scheduler.StepLR(p.optimizer, 1)),
     "a learning-rate scheduler has no vectorised step"),
    (lambda p, k: setattr(p, "optimizer", torch.optim.SGD(p.model.parameters(), lr=0.1, momentum=0.9 * k)),
     "the trials differ in momentum"),
])
def test_unsupported_says_why_trials_cannot_train_together(change, reason):
    data = loaders()
    plans = [plan(k, "adam", data) for k in range(TRIALS)]
    assert vectorized.unsupported(plans) is None
    for k, p in enumerate(plans):
        change(p, k)
    assert reason in vectorized.unsupported(plans)
