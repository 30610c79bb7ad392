"""Training loops driven from bash equal the same loop in Python PyTorch, bit for bit.

Each test builds a small MLP in the daemon, copies its initial weights into a Python twin, runs
STEPS iterations of the five-command loop (zero_grad; forward | mse_loss | backward; step
[; sched step]) through real bash, and compares every parameter with torch.equal.
"""
import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

nn = torch.nn
STEPS = 6
X = torch.randn(16, 3, generator=torch.Generator().manual_seed(1))
Y = torch.randn(16, 2, generator=torch.Generator().manual_seed(2))


def twin():
    return nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))


def model_state(sh, model):
    path = sh.tmp("state.safetensors")
    sh("torch nn save %s %s" % (model, path))
    return load_file(path)


def cli_loop(sh, optim_words, sched_words=None, steps=STEPS):
    """Run the loop from bash; return (initial state, final state)."""
    x, y = sh.put(X), sh.put(Y)
    model = sh("torch nn sequential 'linear 3 8' tanh 'linear 8 2'")
    start = model_state(sh, model)
    opt = sh("torch optim %s %s" % (optim_words.split()[0], model) + " " + " ".join(optim_words.split()[1:]))
    sched = sh(sched_words.format(opt=opt)) if sched_words else None
    body = "torch zero_grad %s; torch forward %s %s | torch mse_loss %s | torch backward; torch step %s" % (
        opt, model, x, y, opt)
    if sched:
        body += "; torch sched step %s" % sched
    sh("torch scope -- bash -c 'set -e; for i in $(seq %d); do %s; done'" % (steps, body))
    return start, model_state(sh, model)


def python_loop(start, make_opt, make_sched=None, steps=STEPS):
    model = twin()
    model.load_state_dict(start)
    opt = make_opt(model.parameters())
    sched = make_sched(opt) if make_sched else None
    for _ in range(steps):
        opt.zero_grad()
        F.mse_loss(model(X), Y).backward()
        opt.step()
        if sched:
            sched.step()
    return model.state_dict()


def assert_bit_equal(got, want):
    assert set(got) == set(want)
    for k in want:
        assert torch.equal(got[k], want[k]), k


OPTIMIZERS = [
    ("sgd --lr 0.1 --momentum 0.9 --nesterov --weight_decay 0.01",
     lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("sgd", lambda p: torch.optim.SGD(p, lr=0.01)),  # the documented default lr, not PyTorch's 1e-3
    ("adam --lr 0.01 --amsgrad --betas 0.8,0.99", lambda p: torch.optim.Adam(p, lr=0.01, amsgrad=True, betas=(0.8, 0.99))),
    ("adamw --lr 0.01 --weight_decay 0.1 --betas '[0.85,0.995]'",
     lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1, betas=(0.85, 0.995))),
    ("adamw --lr 0.01", lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.01)),
    ("rmsprop --lr 0.01 --centered --momentum 0.5 --alpha 0.9",
     lambda p: torch.optim.RMSprop(p, lr=0.01, centered=True, momentum=0.5, alpha=0.9)),
    ("adagrad --lr 0.1 --lr_decay 0.01 --initial_accumulator_value 0.1 --weight_decay 0.001",
     lambda p: torch.optim.Adagrad(p, lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1, weight_decay=0.001)),
    ("nadam --lr 0.01", lambda p: torch.optim.NAdam(p, lr=0.01)),
    ("rprop", lambda p: torch.optim.Rprop(p)),
]


@pytest.mark.parametrize("words,make", OPTIMIZERS, ids=[w.split()[0] + str(i) for i, (w, _) in enumerate(OPTIMIZERS)])
def test_bash_training_loop_equals_python_bit_for_bit(sh, words, make):
    start, got = cli_loop(sh, words)
    assert not torch.equal(start["0.weight"], got["0.weight"])
    assert_bit_equal(got, python_loop(start, make))


SCHEDULERS = [
    ("torch sched step_lr {opt} 2 --gamma 0.5", lambda o: torch.optim.lr_scheduler.StepLR(o, 2, gamma=0.5)),
    ("torch sched cosine {opt} --T_max 5 --eta_min 0.001",
     lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=5, eta_min=0.001)),
    ("torch sched one_cycle {opt} --max_lr 0.5 --total_steps 10",
     lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=0.5, total_steps=10)),
    ("torch sched sequential {opt} $(torch sched linear {opt} --start_factor 0.1 --total_iters 2) "
     "$(torch sched exponential {opt} 0.8) --milestones 2",
     lambda o: torch.optim.lr_scheduler.SequentialLR(o, [
         torch.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=2),
         torch.optim.lr_scheduler.ExponentialLR(o, 0.8)], milestones=[2])),
]


@pytest.mark.parametrize("words,make", SCHEDULERS, ids=[w.split()[2] for w, _ in SCHEDULERS])
def test_scheduled_training_loop_equals_python_bit_for_bit(sh, words, make):
    start, got = cli_loop(sh, "sgd --lr 0.1 --momentum 0.9", words)
    want = python_loop(start, lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), make)
    assert_bit_equal(got, want)


def test_train_step_equals_the_five_command_loop(sh):
    x, y = sh.put(X), sh.put(Y)
    model = sh("torch nn sequential 'linear 3 8' tanh 'linear 8 2'")
    start = model_state(sh, model)
    opt = sh("torch optim adam %s --lr 0.01" % model)
    sched = sh("torch sched cosine %s --T_max 4" % opt)
    losses = sh("for i in $(seq %d); do torch train_step %s %s %s %s --clip 0.5 --sched %s; done"
                % (STEPS, model, opt, x, y, sched)).split()
    ref = twin()
    ref.load_state_dict(start)
    ropt = torch.optim.Adam(ref.parameters(), lr=0.01)
    rsched = torch.optim.lr_scheduler.CosineAnnealingLR(ropt, T_max=4)
    want = []
    for _ in range(STEPS):
        ropt.zero_grad()
        loss = F.mse_loss(ref(X), Y)
        loss.backward()
        nn.utils.clip_grad_norm_(ref.parameters(), 0.5)
        ropt.step()
        rsched.step()
        want.append(loss.item())
    assert len(losses) == STEPS
    assert all(torch.tensor(float(s)).item() == v for s, v in zip(losses, want))  # float32 text reads back exactly
    assert_bit_equal(model_state(sh, model), ref.state_dict())
