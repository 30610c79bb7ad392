"""`torch fit` without --loss: cross_entropy for integer class targets and a Linear head of k > 1 outputs,
mse_loss for float targets shaped as the head's output, each named on one stderr line; anything else is
refused (missing_argument) with the likely losses; a class-index loss with float targets names the fix,
`--target_dtype int64`, which trains as `loss(model(x), y.long())` does in PyTorch. A loss's tensor options
(--loss_args weight, pos_weight) take a list of numbers or a tensor handle, and replay through `history --python`."""
import re
import subprocess
import sys

import pytest
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
                         (CLASSES, 1, "--loss mse_loss --target_dtype float32")):   # one output for integers:
        # the head's width says a value or one logit, never cross_entropy (0 whatever the weights)
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
    r, _, _ = fit(sh, CLASSES, 4, "--loss mse_loss")  # class indices against 4 scores: the loss is the mistake
    assert r.code == 4 and "class indices: --loss cross_entropy" in r.err and "[shape_mismatch]" in r.err, r.err
    r, _, _ = fit(sh, CLASSES, 1, "--loss mse_loss")  # integers against one output: a value, as float32
    assert r.code == 4 and "--target_dtype float32" in r.err and "[dtype_error]" in r.err, r.err



BINARY = (CLASSES % 2).float()  # one logit's targets, [] per item: fit views them as the head's [1]
FIT_AND_SCRIPT = ("torch fit $m $o $L %s >/dev/null; rc=$?; torch nn save $m %s; "
                  "torch history --python --for $m > %s; exit $rc")


def weighted_fit(sh, y, k, flags):
    """(result of a fit with FLAGS after `p=$(torch tensor '[2.5]')`, the initial weights, the final weights, the
    `history --python` script of the model)."""
    first, last, script = sh.tmp("first.safetensors"), sh.tmp("last.safetensors"), sh.tmp("s.py")
    r = sh.run("torch manual_seed 0; p=$(torch tensor '[2.5]'); "
               + MAKE.format(k=k, first=first, x=sh.put(X), y=sh.put(y)) + FIT_AND_SCRIPT % (flags, last, script))
    return r, first, last, script


def checked(script):
    """`python s.py --check`'s exit status and output: the script's weights against the daemon's, bit for bit."""
    p = subprocess.run([sys.executable, "-I", script, "--check"], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout + p.stderr


@pytest.mark.slow  # two fits, each replayed by a Python process of its own
def test_class_weights_as_a_list_and_pos_weight_as_a_handle_train_as_pytorchs_loop_and_replay(sh):
    """--loss_args' tensor options: a list is a tensor in the model's dtype on its device, a handle its tensor;
    `history --python` writes the same tensor (a literal, or the handle's variable)."""
    weight, pos_weight = torch.tensor([1.0, 3.0, 0.5, 2.0]), torch.tensor([2.5])
    cases = (("--loss cross_entropy --loss_args '{\"weight\": [1.0, 3.0, 0.5, 2.0]}'", CLASSES, 4,
              lambda out, y: F.cross_entropy(out, y, weight=weight), F.cross_entropy),
             ("--loss binary_cross_entropy_with_logits --loss_args \"{\\\"pos_weight\\\": \\\"$p\\\"}\"", BINARY, 1,
              lambda out, y: F.binary_cross_entropy_with_logits(out, y.view(len(y), 1), pos_weight=pos_weight),
              lambda out, y: F.binary_cross_entropy_with_logits(out, y.view(len(y), 1))))
    for flags, y, k, loss, unweighted in cases:
        r, first, last, script = weighted_fit(sh, y, k, flags)
        assert r.code == 0, r.err
        assert same(last, python_fit(first, y, k, loss)), flags
        assert not same(last, python_fit(first, y, k, unweighted))  # the weights made a difference
        code, out = checked(script)
        assert code == 0 and re.search(r"check: (\d+) of \1 object", out), out


def test_a_tensor_option_that_is_no_tensor_or_an_option_the_loss_lacks_is_refused_before_any_step(sh):
    for loss_args, code, said in (('{"weight": [1.0, "a", 2.0, 3.0]}', "bad_argument", "weight is a tensor"),
                                  ('{"weight": "$m"}', "wrong_kind", "--loss_args weight: nn://"),
                                  ('{"wieght": [1.0, 2.0, 3.0, 4.0]}', "bad_argument", "takes no such option")):
        r, first, last = fit(sh, CLASSES, 4, "--loss cross_entropy --loss_args \"%s\"" % loss_args.replace('"', '\\"'))
        assert r.code != 0 and "[%s]" % code in r.err and said in r.err, r.err
        assert same(last, load_file(first))  # nothing trained
