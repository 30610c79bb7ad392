"""`torch fit`: the weights equal the same loop written in Python with PyTorch (same loader seed, same
RNG), bit for bit on CPU, with validation, metrics, a scheduler, clipping, accumulation and autocast;
rows on stdout; early stopping."""
import json

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from torch.utils.data import DataLoader, TensorDataset

X = torch.randn(50, 4, generator=torch.Generator().manual_seed(1))
Y = torch.randint(0, 3, (50,), generator=torch.Generator().manual_seed(2))
VX = torch.randn(20, 4, generator=torch.Generator().manual_seed(3))
VY = torch.randint(0, 3, (20,), generator=torch.Generator().manual_seed(4))
# dropout draws from the global RNG every step: parity needs the same random stream as Python
MODEL = "torch nn sequential 'linear 4 16' relu 'dropout --p 0.25' 'linear 16 3'"


def python_model():
    return torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Dropout(0.25),
                               torch.nn.Linear(16, 3))


def python_fit(weights, epochs, accum=1, clip=None, autocast=None, lr=0.05):
    """PyTorch's recipe, written out: what `torch fit` must equal."""
    model = python_model()
    model.load_state_dict(weights)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    loader = DataLoader(TensorDataset(X, Y), batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(11))
    # seeded too: a DataLoader without a generator draws from the global RNG every epoch
    val = DataLoader(TensorDataset(VX, VY), batch_size=8, generator=torch.Generator().manual_seed(12))
    scaler = torch.amp.GradScaler("cpu", enabled=autocast == torch.float16)
    torch.manual_seed(7)
    rows = []
    for epoch in range(epochs):
        model.train()
        total = n = correct = 0
        for i, (x, y) in enumerate(loader):
            if i % accum == 0:
                opt.zero_grad()
            with torch.autocast("cpu", dtype=autocast, enabled=autocast is not None):
                out = model(x)
                loss = F.cross_entropy(out, y)
            total, n = total + loss.item() * len(y), n + len(y)
            correct += (out.argmax(-1) == y).sum().item()
            scaler.scale(loss / accum if accum > 1 else loss).backward()
            if (i + 1) % accum == 0 or i + 1 == len(loader):
                if clip is not None:
                    scaler.unscale_(opt)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
                scaler.step(opt)
                scaler.update()
        model.eval()
        vtotal = vn = 0
        with torch.no_grad(), torch.autocast("cpu", dtype=autocast, enabled=autocast is not None):
            for x, y in val:
                vtotal, vn = vtotal + F.cross_entropy(model(x), y).item() * len(y), vn + len(y)
        model.train()
        rows.append({"epoch": epoch + 1, "loss": total / n, "val_loss": vtotal / vn, "accuracy": correct / n,
                     "lr": opt.param_groups[0]["lr"]})
        sched.step()
    return model.state_dict(), rows


def shell_fit(sh, flags, lr=0.05):
    """Run `torch fit` on a model made in the daemon; return its initial weights, final weights and stdout."""
    x, y, vx, vy = sh.put(X), sh.put(Y), sh.put(VX), sh.put(VY)
    first, last = sh.tmp("first.safetensors"), sh.tmp("last.safetensors")
    out = sh("m=$(%s); torch nn save $m %s; o=$(torch optim sgd $m --lr %s --momentum 0.9); "
             "s=$(torch sched step_lr $o --step_size 1 --gamma 0.5); "
             "L=$(torch data loader $(torch data tensors %s %s) --batch_size 8 --shuffle --seed 11); "
             "V=$(torch data loader $(torch data tensors %s %s) --batch_size 8 --seed 12); torch manual_seed 7; "
             "torch fit $m $o $L --loss cross_entropy --val $V --sched $s --metrics accuracy %s; torch nn save $m %s"
             % (MODEL, first, lr, x, y, vx, vy, flags, last))
    return load_file(first), load_file(last), out


def assert_same_weights(got, want):
    assert got.keys() == want.keys()
    for k in want:
        assert torch.equal(got[k], want[k]), k


def test_fit_equals_the_python_loop_bit_for_bit(sh):
    first, last, out = shell_fit(sh, "--epochs 3 --json")
    want, rows = python_fit(first, 3)
    assert_same_weights(last, want)
    got = [json.loads(line) for line in out.splitlines()]
    assert [r["epoch"] for r in got] == [1, 2, 3]
    for g, w in zip(got, rows):
        assert g["loss"] == w["loss"] and g["val_loss"] == w["val_loss"] and g["accuracy"] == w["accuracy"]
        assert g["lr"] == w["lr"] and "val_accuracy" in g and g["seconds"] >= 0


def test_accumulation_and_clipping_equal_the_python_recipe(sh):
    first, last, _ = shell_fit(sh, "--epochs 2 --accum 3 --clip 0.5")
    want, _ = python_fit(first, 2, accum=3, clip=0.5)
    assert_same_weights(last, want)


def test_bf16_autocast_equals_python_autocast(sh):
    first, last, _ = shell_fit(sh, "--epochs 2 --autocast bf16")
    want, _ = python_fit(first, 2, autocast=torch.bfloat16)
    assert_same_weights(last, want)
    plain, _ = python_fit(first, 2)
    assert any(not torch.equal(last[k], plain[k]) for k in plain)  # bf16 did change the arithmetic


def test_fp16_autocast_with_grad_scaler_and_clipping_equals_python(sh):
    first, last, _ = shell_fit(sh, "--epochs 2 --autocast fp16 --clip 0.5")
    want, _ = python_fit(first, 2, autocast=torch.float16, clip=0.5)
    assert_same_weights(last, want)


def test_rows_print_as_aligned_text_with_a_header(sh):
    _, _, out = shell_fit(sh, "--epochs 2")
    lines = out.splitlines()
    assert lines[0].split() == ["epoch", "loss", "val_loss", "accuracy", "val_accuracy", "lr", "seconds"]
    assert [line.split()[0] for line in lines[1:]] == ["1", "2"]
    assert len({line.index(line.split()[1]) for line in lines}) == 1  # the loss column lines up


def test_patience_stops_after_epochs_without_improvement(sh):
    # lr 0: the validation loss never improves after the first epoch, so patience 2 stops after epoch 3
    _, last, out = shell_fit(sh, "--epochs 10 --patience 2 --json", lr=0)
    assert [json.loads(line)["epoch"] for line in out.splitlines()] == [1, 2, 3]


def test_monitor_must_be_a_column_of_the_run(sh):
    r = sh.run("m=$(torch nn linear 2 1); L=$(torch data loader $(torch data tensors $(torch randn 4 2) "
               "$(torch randn 4 1))); torch fit $m $(torch optim sgd $m) $L --loss mse_loss --patience 1 --monitor val_loss")
    assert r.code == 2 and "[bad_argument]" in r.err and "columns: loss" in r.err


def test_train_step_autocast_bf16_equals_python(sh):
    x, y = sh.put(X), sh.put(Y)
    first, path = sh.tmp("first.safetensors"), sh.tmp("w.safetensors")
    sh("m=$(torch nn linear 4 3); torch nn save $m %s; o=$(torch optim sgd $m --lr 0.1); "
       "torch train_step $m $o %s %s --loss cross_entropy --autocast bf16 >/dev/null; torch nn save $m %s"
       % (first, x, y, path))
    model = torch.nn.Linear(4, 3)
    model.load_state_dict(load_file(first))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = F.cross_entropy(model(X), Y)
    loss.backward()
    opt.step()
    assert_same_weights(load_file(path), model.state_dict())
