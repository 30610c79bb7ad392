"""`torch history --python` of fits: a fit replays as its own loop bit for bit, clipped, scheduled, cut off by
--max_steps, stopped early by patience, resumed (in its daemon, from a checkpoint it does not hold), over
standardized or viewed data; a fit it cannot write is refused naming why."""
import re

import pytest
import torch

from support.history_replay import check as _check, script as _script


def test_a_fit_over_held_tensors_with_clip_and_a_scheduler_replays_as_its_loop_bit_for_bit(sh):
    m = sh("torch manual_seed 5; m=$(torch nn sequential 'linear 2 4' relu 'linear 4 1'); o=$(torch optim sgd $m --lr 0.1)\n"
           "s=$(torch sched step_lr $o --step_size 1 --gamma 0.5)\n"
           "L=$(torch data loader $(torch data tensors $(torch randn 20 2) $(torch randn 20 1)) --batch_size 8 --shuffle)\n"
           "torch fit $m $o $L --loss mse_loss --epochs 3 --clip 0.5 --sched $s >/dev/null; echo $m")
    path, text = _script(sh, m)
    assert "for _epoch in range(3):  # torch fit --epochs 3" in text and "torch.utils.data.TensorDataset(" in text
    assert "clip_grad_norm_(" in text and "torch.manual_seed(5)" in text
    _check(path)


def test_a_fit_cut_off_by_max_steps_mid_epoch_and_at_an_epochs_end_replays_bit_for_bit(sh):
    """--max_steps stops right after that optimizer step, before the epoch's validation and scheduler step;
    the next fit goes on from the loader's position (mid-epoch), and one ending on an epoch's last batch
    leaves the epoch's end to the next call."""
    m = sh("torch manual_seed 5; m=$(torch nn sequential 'linear 2 4' relu 'linear 4 1'); o=$(torch optim sgd $m --lr 0.1)\n"
           "s=$(torch sched step_lr $o --step_size 1 --gamma 0.5)\n"
           "V=$(torch data loader $(torch data tensors $(torch randn 10 2) $(torch randn 10 1)) --batch_size 4)\n"
           "L=$(torch data loader $(torch data tensors $(torch randn 20 2) $(torch randn 20 1)) --batch_size 8 --shuffle)\n"
           "torch fit $m $o $L --loss mse_loss --epochs 4 --val $V --sched $s --max_steps 7 >/dev/null\n"
           "torch fit $m $o $L --loss mse_loss --epochs 3 --max_steps 2 --val $V --sched $s >/dev/null\n"
           "torch fit $m $o $L --loss mse_loss --epochs 2 --val $V --sched $s >/dev/null; echo $m")
    path, text = _script(sh, m)
    assert "while _step < 7:" in text and "if _step >= 2:  # --max_steps 2" in text
    _check(path)


def test_a_fit_stopped_early_by_patience_on_loss_or_val_loss_replays_bit_for_bit(sh):
    rows = sh("torch manual_seed 3; m=$(torch nn sequential 'linear 2 8' relu 'linear 8 1'); o=$(torch optim sgd $m --lr 0.4)\n"
              "V=$(torch data loader $(torch data tensors $(torch randn 12 2) $(torch randn 12 1)) --batch_size 5)\n"
              "L=$(torch data loader $(torch data tensors $(torch randn 40 2) $(torch randn 40 1)) --batch_size 8 --shuffle)\n"
              "torch fit $m $o $L --loss mse_loss --epochs 30 --val $V --patience 2 --json | grep -c '\"epoch\"'\n"
              "torch fit $m $o $L --loss mse_loss --epochs 30 --patience 1 --json | grep -c '\"epoch\"'; echo $m").split()
    assert int(rows[0]) < 30 and int(rows[1]) < 30, rows  # both runs stopped early
    path, text = _script(sh, rows[-1])
    assert text.count("_bad >= ") == 2
    _check(path)


def test_python_refuses_a_fit_without_loss_naming_it(sh):
    m = sh("m=$(torch nn linear 2 1); o=$(torch optim sgd $m); "
           "L=$(torch data loader $(torch data tensors $(torch randn 16 2) $(torch randn 16 1)) --batch_size 8); "
           "torch fit $m $o $L --epochs 1 >/dev/null 2>&1; echo $m")
    r = sh.run("torch history --python --for %s" % m)
    assert r.code == 2 and "fit" in r.err and "[not_portable]" in r.err


def test_a_fit_cut_off_mid_epoch_and_resumed_twice_in_its_daemon_replays_bit_for_bit(sh, tmp_path):
    """--resume auto from the `last` the fit before it left: the loop goes on from the checkpoint's epoch and
    step (mid-epoch here); one with nothing left to do is a comment."""
    m = sh("cd %s; torch manual_seed 1; m=$(torch nn linear 2 1); o=$(torch optim sgd $m --lr 0.1)\n"
           "L=$(torch data loader $(torch data tensors $(torch randn 16 2) $(torch randn 16 1)) --batch_size 4 --shuffle)\n"
           "fit() { torch fit $m $o $L --loss mse_loss --epochs 4 --log run \"$@\" >/dev/null 2>&1; }\n"
           "fit --max_steps 6; fit --resume auto --max_steps 10; fit --resume auto; fit --resume auto; echo $m" % tmp_path)
    path, text = _script(sh, m)
    assert "resumed at epoch 2 step 6" in text and "resumed at epoch 3 step 10" in text
    assert "# torch fit --resume: nothing to do" in text
    _check(path)


def test_a_fit_resumed_from_a_checkpoint_the_daemon_does_not_hold_restores_it_and_replays(sh, tmp_path):
    """A checkpoint older than the daemon's objects (here a fit without --log ran since): the log kept it as
    the run read it, and the script restores the model, optimizer, generator and loader from it."""
    m = sh("cd %s; torch manual_seed 1; m=$(torch nn linear 2 1); o=$(torch optim adam $m --lr 0.1)\n"
           "L=$(torch data loader $(torch data tensors $(torch randn 16 2) $(torch randn 16 1)) --batch_size 4 "
           "--shuffle)\n"
           "torch fit $m $o $L --loss mse_loss --epochs 2 --log run >/dev/null\n"
           "torch fit $m $o $L --loss mse_loss --epochs 1 >/dev/null\n"
           "torch fit $m $o $L --loss mse_loss --epochs 4 --log run --resume auto >/dev/null\n"
           "echo $m" % tmp_path)
    path, text = _script(sh, m, "--sidecar %s" % sh.tmp("s.safetensors"))
    assert "the checkpoint as the run read it" in text and ".restore(" in text and "torch.set_rng_state(" in text
    _check(path)


def test_a_fit_resumed_with_patience_from_another_checkpoint_is_refused(sh, tmp_path):
    """--patience's best value and bad epochs live in the checkpoint, which the loop does not write."""
    m = sh("cd %s; torch manual_seed 1; m=$(torch nn linear 2 1); o=$(torch optim sgd $m --lr 0.1)\n"
           "L=$(torch data loader $(torch data tensors $(torch randn 16 2) $(torch randn 16 1)) --batch_size 4)\n"
           "torch fit $m $o $L --loss mse_loss --epochs 2 --log run --patience 3 >/dev/null\n"
           "torch fit $m $o $L --loss mse_loss --epochs 1 >/dev/null\n"
           "torch fit $m $o $L --loss mse_loss --epochs 4 --log run --resume auto --patience 3 >/dev/null\n"
           "echo $m" % tmp_path)
    err = sh.run("torch history --python --for %s" % m).err
    assert "cannot write fit as PyTorch" in err and "--resume" in err, err


def _csv(path, rows, seed, scale):
    """A regression table a,b -> y (y = 0.02a - b + 0.1): `a` of SCALE, `b` around 0."""
    g = torch.Generator().manual_seed(seed)
    a, b = torch.rand(rows, generator=g) * scale, torch.rand(rows, generator=g) * 10 - 5
    with open(path, "w") as f:
        f.write("a,b,y\n" + "".join("%.4f,%.4f,%.4f\n" % (p, q, 0.02 * p - q + 0.1) for p, q in zip(a, b)))
    return path


@pytest.mark.slow  # a fit and its script's own Python process
def test_a_fit_whose_targets_fit_viewed_as_the_output_replays_bit_for_bit(sh):
    """A CSV's column of targets ([] per item) against a 'linear 2 1' head ([1]): fit views them as the output
    (y.view(N, 1)); the script writes the same view, not mse_loss's broadcast of [N, 1] against [N]."""
    path = _csv(sh.tmp("t.csv"), 40, 1, 1.0)
    m = sh("torch manual_seed 1; m=$(torch nn linear 2 1); o=$(torch optim sgd $m --lr 0.1); "
           "L=$(torch data loader $(torch data open %s --target y) --batch_size 8 --shuffle --seed 3); "
           "torch fit $m $o $L --loss mse_loss --epochs 2 >/dev/null 2>&1; echo $m" % path)
    path, text = _script(sh, m)
    assert re.search(r"mse_loss\(\w+\(\*_x\), _y\.view\(len\(_y\), 1\)\)", text), text
    assert re.search(r"check: (\d+) of \1 object", _check(path))


@pytest.mark.slow  # a fit and its script's own Python process
def test_a_fit_validating_raw_rows_of_standardized_training_data_replays_bit_for_bit(sh):
    """--val's raw rows are standardized as the training rows were (the model's card); the script does the
    same, so --patience on val_loss stops at the same epoch (raw rows, 100 times the scale, would not)."""
    train, val = _csv(sh.tmp("train.csv"), 40, 2, 100.0), _csv(sh.tmp("val.csv"), 12, 3, 100.0)
    m = sh("torch manual_seed 1; m=$(torch nn linear 2 1); o=$(torch optim sgd $m --lr 0.05); "
           "L=$(torch data loader $(torch data transform $(torch data open %s --target y) --standardize) "
           "--batch_size 8 --shuffle --seed 3); "
           "V=$(torch data loader $(torch data open %s --target y) --batch_size 4); "
           "torch fit $m $o $L --loss mse_loss --epochs 12 --val $V --patience 1 >/dev/null 2>&1; echo $m"
           % (train, val))
    path, text = _script(sh, m)
    assert "# --val's raw rows, standardized as the model was trained" in text
    assert re.search(r"check: (\d+) of \1 object", _check(path))
