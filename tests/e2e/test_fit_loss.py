"""`torch fit` without --loss: cross_entropy for integer class targets and a Linear head of k > 1 outputs,
mse_loss for float targets shaped as the head's output, each named on one stderr line; anything else is
refused (missing_argument) with the likely losses; a class-index loss with float targets names the fix,
`--target_dtype int64`, which trains as `loss(model(x), y.long())` does in PyTorch."""
import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from torch.utils.data import DataLoader, TensorDataset

X = torch.randn(24, 3, generator=torch.Generator().manual_seed(1))
CLASSES = torch.randint(0, 4, (24,), generator=torch.Generator().manual_seed(2))
VALUES = torch.randn(24, 2, generator=torch.Generator().manual_seed(3))
MAKE = ("m=$(torch nn sequential 'linear 3 8' relu 'linear 8 {k}'); torch nn save $m {first}; "
        "o=$(torch optim sgd $m --lr 0.1); L=$(torch data loader $(torch data tensors {x} {y}) --batch_size 8 "
        "--shuffle --seed 5); ")


def fit(sh, y, k, flags):
    """(result of `torch fit $m $o $L FLAGS`, the initial weights file, the final weights file)."""
    first, last = sh.tmp("first.safetensors"), sh.tmp("last.safetensors")
    r = sh.run(MAKE.format(k=k, first=first, x=sh.put(X), y=sh.put(y)) + "torch fit $m $o $L %s >/dev/null; "
               "rc=$?; torch nn save $m %s; exit $rc" % (flags, last))
    return r, first, last


def python_fit(first, y, k, loss):
    """The loop in PyTorch: what fit with that loss must equal, bit for bit."""
    model = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.ReLU(), torch.nn.Linear(8, k))
    model.load_state_dict(load_file(first))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for xb, yb in DataLoader(TensorDataset(X, y), batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(5)):
        opt.zero_grad()
        loss(model(xb), yb).backward()
        opt.step()
    return model.state_dict()


def same(got_file, want):
    got = load_file(got_file)
    return got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in want)


def test_integer_class_targets_and_a_linear_head_choose_cross_entropy_and_say_so(sh):
    r, first, last = fit(sh, CLASSES, 4, "")
    assert r.code == 0, r.err
    assert "torch: fit: --loss cross_entropy (int64 class targets, a Linear head of 4 outputs)\n" in r.err
    assert same(last, python_fit(first, CLASSES, 4, F.cross_entropy))


def test_float_targets_shaped_as_the_output_choose_mse_loss_and_say_so(sh):
    r, first, last = fit(sh, VALUES, 2, "")
    assert r.code == 0, r.err
    assert "torch: fit: --loss mse_loss (float32 targets shaped as the Linear head's output [2])\n" in r.err
    assert same(last, python_fit(first, VALUES, 2, F.mse_loss))


def test_targets_that_do_not_say_which_loss_are_refused_naming_the_likely_ones(sh):
    for y, k, likely in ((CLASSES.float(), 4, "--loss cross_entropy --target_dtype int64"),
                         (VALUES[:, 0], 1, "--loss mse_loss"),                      # [1] outputs against [] targets
                         (CLASSES, 1, "--loss cross_entropy")):                     # one output for class indices
        r, first, last = fit(sh, y, k, "")
        assert r.code == 2 and "[missing_argument]" in r.err and "--loss is needed" in r.err, r.err
        assert "likely: " in r.err and likely in r.err, r.err
        assert same(last, load_file(first))  # nothing trained
    r = sh.run("m=$(torch nn sequential 'linear 3 1' sigmoid); L=$(torch data loader $(torch data tensors %s %s)); "
               "torch fit $m $(torch optim sgd $m) $L" % (sh.put(X), sh.put(VALUES[:, :1])))
    assert r.code == 2 and "last layer (Sigmoid)" in r.err and "[missing_argument]" in r.err


def test_cross_entropy_with_float_class_targets_names_target_dtype_which_fixes_it(sh):
    floats = CLASSES.float()  # an all-integer label column read as float32
    r, first, last = fit(sh, floats, 4, "--loss cross_entropy")
    assert r.code == 4 and "[dtype_error]" in r.err and "--target_dtype int64" in r.err, r.err
    assert same(last, load_file(first))
    r, first, last = fit(sh, floats, 4, "--loss cross_entropy --target_dtype int64")
    assert r.code == 0, r.err
    assert same(last, python_fit(first, floats, 4, lambda out, y: F.cross_entropy(out, y.long())))
    r, _, _ = fit(sh, CLASSES, 4, "--loss mse_loss")
    assert r.code == 4 and "--target_dtype float32" in r.err, r.err

