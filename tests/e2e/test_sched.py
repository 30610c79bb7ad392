"""Learning-rate schedulers from bash: every torch.optim.lr_scheduler class, sched step / lr, the
learning rates equal PyTorch's at every step."""
import json

import pytest
import torch

sched = torch.optim.lr_scheduler


@pytest.fixture
def opt(sh):
    return sh("m=$(torch nn linear 2 1); torch optim sgd $m --lr 0.1 --momentum 0.9")


def python_opt():
    return torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1, momentum=0.9)


def test_every_scheduler_class_has_a_kind(sh):
    rows = json.loads(sh("torch sched list --json"))
    classes = {r["class"] for r in rows}
    expected = {n for n in dir(sched) if isinstance(getattr(sched, n), type) and not n.startswith("_")
                and issubclass(getattr(sched, n), sched.LRScheduler)}
    assert classes == expected - {"LRScheduler", "LambdaLR", "MultiplicativeLR"}  # these take Python functions
    short = {a for r in rows for a in r["aliases"]}
    assert {"cosine", "one_cycle", "exponential", "linear", "sequential", "plateau"} <= short


@pytest.mark.parametrize("words,make", [
    ("cosine --T_max 4 --eta_min 0.01", lambda o: sched.CosineAnnealingLR(o, T_max=4, eta_min=0.01)),
    ("CosineAnnealingWarmRestarts 3 --T_mult 2", lambda o: sched.CosineAnnealingWarmRestarts(o, 3, T_mult=2)),
    ("step_lr 2 --gamma 0.5", lambda o: sched.StepLR(o, 2, gamma=0.5)),
    ("multi_step '[2,5]'", lambda o: sched.MultiStepLR(o, [2, 5])),
    ("exponential 0.9", lambda o: sched.ExponentialLR(o, 0.9)),
    ("linear --start_factor 0.25 --total_iters 4", lambda o: sched.LinearLR(o, start_factor=0.25, total_iters=4)),
    ("constant --factor 0.5 --total_iters 3", lambda o: sched.ConstantLR(o, factor=0.5, total_iters=3)),
    ("polynomial --total_iters 6 --power 2", lambda o: sched.PolynomialLR(o, total_iters=6, power=2.0)),
    ("one_cycle 1.0 --total_steps 8 --anneal_strategy linear",
     lambda o: sched.OneCycleLR(o, 1.0, total_steps=8, anneal_strategy="linear")),
    ("cyclic 0.01 0.2 --step_size_up 3", lambda o: sched.CyclicLR(o, 0.01, 0.2, step_size_up=3)),
])
def test_learning_rates_follow_pytorch_step_by_step(sh, opt, words, make):
    kind, rest = (words.split(" ", 1) + [""])[:2]
    s = sh("torch sched %s %s %s" % (kind, opt, rest))
    got = sh("for i in $(seq 7); do torch sched lr %s; torch step %s; torch sched step %s; done"
             % (s, opt, s)).split()
    o = python_opt()
    ref = make(o)
    want = []
    for _ in range(7):
        want.append(ref.get_last_lr()[0])
        o.step()
        ref.step()
    assert [float(v) for v in got] == want


def test_sequential_warmup_then_cosine(sh, opt):
    s = sh("w=$(torch sched linear {o} --start_factor 0.1 --total_iters 3); c=$(torch sched cosine {o} --T_max 5); "
           "torch sched sequential {o} $w $c --milestones 3".format(o=opt))
    got = [float(v) for v in sh("for i in $(seq 8); do torch sched step %s; torch sched lr %s; done" % (s, s)).split()]
    o = python_opt()
    ref = sched.SequentialLR(o, [sched.LinearLR(o, start_factor=0.1, total_iters=3),
                                 sched.CosineAnnealingLR(o, T_max=5)], milestones=[3])
    want = []
    for _ in range(8):
        ref.step()
        want.append(ref.get_last_lr()[0])
    assert got == want


def test_reduce_on_plateau_steps_on_a_metric(sh, opt):
    s = sh("torch sched plateau %s --patience 1 --factor 0.5" % opt)
    r = sh.run("torch sched step %s" % s)
    assert r.code == 2 and "--metric" in r.err
    got = sh("for v in 1.0 1.0 1.0 1.0; do torch sched step %s --metric $v; done; torch sched lr %s" % (s, s))
    ref = sched.ReduceLROnPlateau(python_opt(), patience=1, factor=0.5)
    for _ in range(4):
        ref.step(1.0)
    assert float(got) == ref.get_last_lr()[0]


def test_a_metric_for_a_scheduler_that_takes_none_is_an_error(sh, opt):
    s = sh("torch sched exponential %s 0.5" % opt)
    assert sh.run("torch sched step %s --metric 1" % s).code == 2


def test_scheduler_errors_are_usage_errors(sh, opt):
    r = sh.run("torch sched cosine %s" % opt)
    assert r.code == 2 and "T_max" in r.err
    r = sh.run("torch sched cosine %s --T_max 5 --tmax 3" % opt)
    assert r.code == 2 and "unknown flag --tmax" in r.err
    r = sh.run("torch sched one_cycle %s 0.5" % opt)  # needs total_steps or epochs and steps_per_epoch
    assert r.code == 2 and "OneCycleLR" in r.err


def test_scheduler_changes_the_optimizers_lr(sh, opt):
    s = sh("torch sched step_lr %s 1 --gamma 0.5" % opt)
    sh("torch step %s; torch sched step %s" % (opt, s))
    assert sh("torch optim lr %s" % opt) == "0.05"


def test_a_refused_scheduler_leaves_its_optimizer_as_it_was(sh, opt):
    """PyTorch's CyclicLR sets every group's lr to base_lr before it checks max_lr's length: the refusal
    must not leave the optimizer (and the census that reads its lr) with a half-built scheduler's values."""
    before = sh("torch optim lr %s" % opt)
    r = sh.run("torch sched cyclic_lr %s '[0.5]' '[1,2]' --base_momentum 0.3" % opt)
    assert r.code == 2 and "max_lr" in r.err
    o = python_opt()
    with pytest.raises(ValueError):  # the oracle: PyTorch itself did write lr before refusing
        sched.CyclicLR(o, [0.5], [1, 2], base_momentum=0.3)
    assert o.param_groups[0]["lr"] == 0.5
    assert sh("torch optim lr %s" % opt) == before == "0.1"
    (row,) = [r for r in json.loads(sh("torch tensors --kind optim --json")) if r["handle"] == opt]
    assert row["lr"] == 0.1
