"""`torch history`: the requests that changed the daemon's state, listed, and written as a plain PyTorch script
(`--python`, `--for HANDLE`) that reproduces the daemon's objects bit for bit (`python s.py --check`)."""
import glob
import json
import os
import re
import subprocess
import sys

from support import apicall
import pytest
import torch


def _script(sh, target, extra=""):
    path = sh.tmp("s.py")
    sh("torch history --python --for %s %s > %s" % (target, extra, path))
    with open(path) as f:
        return path, f.read()


def _check(path):
    p = subprocess.run([sys.executable, "-I", path, "--check"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


_AUTOGRAD_AND_OPTIMIZER = """
x=$(torch randn 16 3); w=$(torch randn 3 1 --requires_grad); y=$(torch matmul $x $w)
torch backward $(torch sum $(torch mul $y $y))
m=$(torch nn sequential 'linear 3 8' relu 'linear 8 1'); o=$(torch optim sgd $m --lr 0.1 --momentum 0.9)
for i in 1 2 3; do
  torch zero_grad $o; p=$(torch forward $m $x); torch backward $(torch mse_loss $p $(torch detach $y) --reduction sum); torch step $o
done
echo $m $w
"""


def test_an_unseeded_autograd_and_optimizer_session_replays_bit_for_bit_from_the_embedded_generator_state(sh):
    m, w = sh(_AUTOGRAD_AND_OPTIMIZER).split()
    path, text = _script(sh, m)
    assert "import torchsh" not in text and "import torch\n" in text
    assert "torch.set_rng_state(" in text and "torch.nn.Sequential(torch.nn.Linear(" in text
    assert "torch.optim.SGD(" in text and ".step()" in text and ".backward(" in text
    assert "check: " in _check(path)
    path, _ = _script(sh, w)
    _check(path)


def test_a_seeded_session_replays_from_its_seed(sh):
    m, _ = sh("torch manual_seed 1234\n" + _AUTOGRAD_AND_OPTIMIZER).split()
    path, text = _script(sh, m)
    assert "torch.manual_seed(1234)" in text and "set_rng_state" not in text
    _check(path)


def test_names_are_the_scripts_variable_names_and_for_takes_a_name(fresh_sh):
    sh = fresh_sh()  # a daemon of its own: names pin their objects, and docs/names.md's examples make @exp1/*
    sh("torch manual_seed 7; torch randn 4 3 --name exp1/x; torch nn sequential 'linear 3 2' --name enc; "
       "torch randn 3 --name range; torch optim sgd @enc --lr 0.1 --name 0pt")
    sh("torch backward $(torch sum $(torch forward @enc @exp1/x)); torch step @0pt")
    path, text = _script(sh, "@enc")
    assert re.search(r"^enc = torch\.nn\.Sequential\(", text, re.M), text
    assert re.search(r"^exp1_x = torch\.randn\(", text, re.M) and "enc(exp1_x)" in text.replace(" ", ""), text
    assert not re.search(r"^range = ", text, re.M) and not re.search(r"^_?0pt = ", text, re.M)  # shadowing, not an identifier
    assert '"enc":' in text and re.search(r"check: (\d+) of \1 object", _check(path))


@pytest.mark.slow  # 300 steps
def test_identical_repeated_requests_become_one_loop(sh):
    m = sh('eval "$(torch init bash)"\n'
           "m=$(torch nn linear 4 2); o=$(torch optim adam $m); x=$(torch randn 8 4); t=$(torch randn 8 2)\n"
           "for i in $(seq 300); do torch train_step $m $o $x $t >/dev/null; done; echo $m", timeout=600)
    path, text = _script(sh, m)
    assert "for _ in range(300):" in text
    assert len(text.splitlines()) < 80
    _check(path)


@pytest.mark.slow  # 5,000 requests, ~40 s on 2 cores
def test_a_5000_request_exploratory_session_sliced_for_its_final_model_is_under_100_lines_and_checks(sh):
    session = r'''eval "$(torch init bash)"
x=$(torch randn 32 4); t=$(torch randn 32 1)
m=$(torch nn sequential 'linear 4 16' tanh 'linear 16 1'); o=$(torch optim sgd $m --lr 0.05)
for i in $(seq 1250); do
  a=$(torch randn 3 3); b=$(torch matmul $a $a)   # looking around: nothing the model depends on
  torch value $(torch forward $m $x) >/dev/null
  torch train_step $m $o $x $t >/dev/null
done
echo $m'''
    m = sh(session, timeout=1200)
    entries = json.loads(sh("torch history --json"))
    assert len(entries) >= 5000
    path, text = _script(sh, m)
    assert len(text.splitlines()) < 100, text
    _check(path)


def test_the_log_is_bounded_and_counted_in_daemon_status(sh):
    sh("torch randn 2 >/dev/null")
    status = json.loads(sh("torch daemon status --json"))["history"]
    assert 0 < status["entries"] <= status["max_entries"] and 0 < status["bytes"] <= status["max_bytes"]
    assert re.search(r"^history: +\d+ request\(s\), ", sh("torch daemon status"), re.M)


def test_reading_ops_are_not_logged(sh):
    x = sh("torch ones 2 2")
    before = json.loads(sh("torch history --json"))[-1]["seq"]
    sh("torch value %s; torch shape %s; torch tensors >/dev/null; torch add --help >/dev/null; torch history >/dev/null"
       % (x, x))
    assert json.loads(sh("torch history --json"))[-1]["seq"] == before


def test_a_json_api_request_is_logged_like_a_command_line_one(sh):
    x = sh("torch ones 3")
    status, reply = apicall.post(sh, "mul", {"args": [x, 2.5]})
    assert status == 200
    last = json.loads(sh("torch history --last 1 --json"))
    assert last[0]["op"] == "mul" and last[0]["args"] == {"input": x, "other": 2.5}
    assert last[0]["outputs"] == [reply["result"]]


def test_a_history_row_holds_the_bound_arguments_outputs_exit_and_randomness(sh):
    rows = json.loads(sh("x=$(torch randn 2 3); torch add $x 1 >/dev/null; torch history --last 2 --json"))
    assert [r["op"] for r in rows] == ["randn", "add"]
    assert rows[0]["random"] and not rows[1]["random"] and rows[1]["exit"] == 0
    assert rows[1]["args"]["input"] == rows[0]["outputs"][0] and rows[1]["args"]["other"] == 1


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


@pytest.mark.slow  # two daemons
def test_the_history_is_saved_with_the_session_and_replays_after_a_load(fresh_sh):
    sh = fresh_sh()
    handles = sh("m=$(torch nn linear 3 1); o=$(torch optim sgd $m --lr 0.1); x=$(torch randn 8 3); y=$(torch randn 8 1)\n"
                 "torch train_step $m $o $x $y >/dev/null; torch session save saved >/dev/null; echo $m $o $x $y")
    sh("torch daemon stop >/dev/null; torch session load saved >/dev/null; torch train_step %s >/dev/null" % handles)
    ops = [r["op"] for r in json.loads(sh("torch history --json"))]
    assert ops == ["nn.linear", "optim.sgd", "randn", "randn", "train_step", "train_step"]
    path, text = _script(sh, handles.split()[0])
    assert "for _ in range(2):" in text
    _check(path)


@pytest.mark.slow  # 250 requests through bash
def test_the_five_command_step_repeated_becomes_one_loop(sh):
    m = sh('eval "$(torch init bash)"\n'
           "m=$(torch nn linear 2 1); o=$(torch optim sgd $m --lr 0.05 --momentum 0.9); x=$(torch randn 4 2); y=$(torch randn 4 1)\n"
           "for i in $(seq 50); do\n"
           "  torch zero_grad $o; p=$(torch forward $m $x); l=$(torch mse_loss $p $y); torch backward $l; torch step $o\n"
           "done; echo $m")
    path, text = _script(sh, m)
    assert text.count("for _ in range(50):") == 1
    body = text[text.index("for _ in range(50):"):].splitlines()[1:6]
    assert all(line.startswith("    ") for line in body)
    assert [w in line for w, line in zip(("zero_grad", "(", "mse_loss", ".backward(", ".step()"), body)] == [True] * 5
    _check(path)


_EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")


@pytest.mark.slow  # each runs an example
@pytest.mark.parametrize("name,steps", [("regression.sh", 100), ("classifier.sh", 40)])
def test_an_example_sliced_for_its_model_replays_bit_for_bit(fresh_sh, name, steps):
    sh = fresh_sh()
    sh("STEPS=%d bash %s >/dev/null" % (steps, os.path.join(_EXAMPLES, name)), timeout=600)
    model = sh("torch tensors --kind nn -q").split()[0]
    path, text = _script(sh, model)
    assert "for _ in range(" in text
    _check(path)


# Run in place of the example's own EXIT trap, before it stops its daemon and removes its files: the script
# reads the files the example made from their paths, so it must run while they are there
_REPLAY_TRAP = ("trap 'torch history --python --for $model --sidecar \"$REPLAY/s.safetensors\" > \"$REPLAY/s.py\" && "
                "(cd \"$REPLAY\" && \"$PYTHON\" -I s.py --check) > \"$REPLAY/check.txt\" 2>&1; echo $? > \"$REPLAY/rc\"; "
                "torch daemon stop >/dev/null 2>&1 || true; rm -rf \"$work\"' EXIT")


@pytest.mark.slow  # each runs an example, with a daemon of its own
@pytest.mark.parametrize("name,env", [("fit.sh", "EPOCHS=3"), ("predict.sh", ""), ("images.sh", "")])
def test_an_example_with_its_own_daemon_replays_for_its_model_bit_for_bit(sh, tmp_path, name, env):
    """fit.sh resumes in a fresh daemon from a checkpoint the run then overwrites; predict.sh opens a CSV
    and standardizes it; images.sh opens an image folder: each is sliced for its model at its end."""
    with open(os.path.join(_EXAMPLES, name)) as f:
        text = f.read()
    assert text.count("\ntrap '") == 1
    copy = tmp_path / name
    copy.write_text(re.sub(r"(?m)^trap '.*' EXIT$", lambda m: _REPLAY_TRAP, text))
    sh("REPLAY=%s PYTHON=%s %s bash %s >/dev/null" % (tmp_path, sys.executable, env, copy), timeout=600)
    check = (tmp_path / "check.txt").read_text()
    assert (tmp_path / "rc").read_text().strip() == "0", check
    assert re.search(r"check: (\d+) of \1 object", check), check


def test_a_persisted_daemon_keeps_its_history_across_a_restart(fresh_sh):
    sh = fresh_sh(start=False)
    os.makedirs(os.path.join(sh.folder, "p"), mode=0o700)
    sh.env["TORCHSH_PERSIST"] = os.path.join(sh.folder, "p")
    x = sh("torch randn 3")
    sh("torch daemon stop >/dev/null")
    y = sh("torch mul %s 2" % x)
    assert [r["op"] for r in json.loads(sh("torch history --json"))] == ["randn", "mul"]
    path, _ = _script(sh, y)
    _check(path)


def test_tensors_read_from_files_now_gone_come_back_as_literals_or_from_the_sidecar(sh):
    import torch
    small, large = sh.put(torch.arange(6.0).reshape(2, 3)), sh.put(torch.rand(100, 10, dtype=torch.float64))
    y = sh("torch add $(torch sum %s) $(torch sum %s)" % (small, large))
    for path in glob.glob(os.path.join(sh.folder, "*-put.pt")):  # what sh.put loaded them from
        os.unlink(path)
    folder = sh.tmp("replay")
    os.makedirs(folder)
    sh("torch history --python --for %s --sidecar %s/data.safetensors > %s/s.py" % (y, folder, folder))
    with open(os.path.join(folder, "s.py")) as f:
        text = f.read()
    assert "torch.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], dtype=torch.float32)" in text and "_sidecar('s0')" in text
    _check(os.path.join(folder, "s.py"))


def test_without_sidecar_large_tensors_go_beside_the_script_under_their_sha256_and_are_never_written_over(sh):
    import torch
    y = sh("torch add $(torch sum %s) 1" % sh.put(torch.rand(100, 10, dtype=torch.float64)))
    for path in glob.glob(os.path.join(sh.folder, "*-put.pt")):  # gone: the script needs the values themselves
        os.unlink(path)
    folder = sh.tmp("default")
    os.makedirs(folder)
    r = sh.run("torch history --python --for %s > s.py" % y, cwd=folder)
    name = re.search(r"history-[0-9a-f]{16}\.safetensors", r.err).group(0)
    assert r.code == 0 and set(os.listdir(folder)) == {"s.py", name}
    assert "SIDECAR = '%s'" % name in open(os.path.join(folder, "s.py")).read()
    _check(os.path.join(folder, "s.py"))
    again = sh.run("torch history --python --for %s > s2.py" % y, cwd=folder)  # the same tensors: the same file
    assert again.code == 0 and name in again.err and "already there" in again.err
    with open(os.path.join(folder, name), "wb") as f:
        f.write(b"not these tensors")
    refused = sh.run("torch history --python --for %s > s3.py" % y, cwd=folder)
    assert refused.code == 6 and "[file_error]" in refused.err and "--sidecar" in refused.err
    assert open(os.path.join(folder, name), "rb").read() == b"not these tensors"


def _files(folder):
    """Files of each format `torch load` reads from its path in the script, and a model saved by `nn save`."""
    import numpy as np
    import torch
    from safetensors.torch import save_file
    g = torch.Generator().manual_seed(3)
    torch.save(torch.randn(30, 4, generator=g), os.path.join(folder, "a.pt"))
    torch.save([torch.ones(2), torch.randn(80, generator=g)], os.path.join(folder, "l.pt"))
    np.save(os.path.join(folder, "b.npy"), np.arange(90.0).reshape(9, 10))
    np.savez(os.path.join(folder, "z.npz"), p=np.ones(3, dtype=np.float32), q=np.arange(70))
    save_file({"w": torch.randn(100, generator=g).to(torch.bfloat16), "b": torch.ones(2)},
              os.path.join(folder, "c.safetensors"))


_READS = """
a=$(torch load a.pt); b=$(torch load b.npy --dtype float32)
read -r cb cw < <(torch load c.safetensors | xargs); read -r l0 l1 < <(torch load l.pt | xargs)
read -r zp zq < <(torch load z.npz | xargs)
s=$(torch add $(torch sum $a) $(torch sum $b)); s=$(torch add $s $(torch sum $cw --dtype float32))
s=$(torch add $s $(torch sum $l1)); s=$(torch add $s $(torch sum $zq --dtype float32))
m=$(torch nn sequential 'linear 3 2' relu 'linear 2 1'); torch nn save $m m.safetensors
m2=$(torch nn sequential 'linear 3 2' relu 'linear 2 1'); torch nn load $m2 m.safetensors >/dev/null
echo $s $m2
"""


def _read_files(sh):
    """(the folder, the sum of tensors read from each format, a model `nn load`ed) after _READS."""
    folder = sh.tmp("files")
    os.makedirs(folder)
    _files(folder)
    s, m2 = sh("cd %s\n%s" % (folder, _READS)).split()
    return folder, s, m2


def test_files_it_loaded_are_read_from_their_paths_with_their_sha256_and_replay_bit_for_bit(sh):
    folder, s, m2 = _read_files(sh)
    path, text = _script(sh, s)
    assert "SIDECAR" not in text and "torch.tensor(" not in text  # nothing written as a value
    assert "torch.load(_checked(%r, " % os.path.join(folder, "a.pt") in text
    assert "numpy.load(_checked(%r, " % os.path.join(folder, "b.npy") in text
    assert re.search(r"^# sha256 [0-9a-f]{64} of %s when the daemon read it$" % re.escape(repr(os.path.join(folder, "c.safetensors"))),
                     text, re.M), text
    assert "check: 17 of 17 " in _check(path)  # the nine tensors read, the eight sums
    path, text = _script(sh, m2)
    assert ".load_state_dict(_safetensors(_checked(%r, " % os.path.join(folder, "m.safetensors") in text
    _check(path)


def test_a_script_stops_naming_the_file_when_a_file_it_reads_changed_or_is_gone(sh):
    folder, s, _ = _read_files(sh)
    path, _ = _script(sh, s)
    with open(os.path.join(folder, "b.npy"), "r+b") as f:
        f.seek(-1, 2)
        f.write(b"\x01")
    p = subprocess.run([sys.executable, "-I", path, "--check"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "b.npy changed since the daemon read it: sha256 " in p.stderr, p.stderr
    os.unlink(os.path.join(folder, "a.pt"))
    p = subprocess.run([sys.executable, "-I", path], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "a.pt is gone or unreadable" in p.stderr, p.stderr


def test_a_file_changed_or_gone_before_the_script_is_written_comes_back_as_its_values(sh):
    folder, s, _ = _read_files(sh)
    os.unlink(os.path.join(folder, "a.pt"))
    with open(os.path.join(folder, "z.npz"), "ab") as f:
        f.write(b"\0")
    replay = sh.tmp("replay")
    os.makedirs(replay)
    sh("torch history --python --for %s --sidecar %s/data.safetensors > %s/s.py" % (s, replay, replay))
    with open(os.path.join(replay, "s.py")) as f:
        text = f.read()
    assert "_sidecar('s0')" in text and "'%s'" % os.path.join(folder, "a.pt") not in text
    assert "z.npz" not in text and "numpy.load(_checked(%r, " % os.path.join(folder, "b.npy") in text
    _check(os.path.join(replay, "s.py"))


def test_the_readme_tour_sliced_for_its_model_and_its_gradient_replays_bit_for_bit(sh, tmp_path):
    from test_readme import tour
    model, w = sh("set -e\ncd %s\n%s\necho $model $w" % (tmp_path, tour())).split("\n")[-1].split()
    path, text = _script(sh, model)
    assert "torch.optim.lr_scheduler.CosineAnnealingLR(" in text and "torch.optim.AdamW(" in text
    _check(path)
    path, _ = _script(sh, w)
    _check(path)


@pytest.mark.slow  # two daemons
def test_the_readme_sessions_tour_sliced_for_its_model_replays_across_the_load(sh, tmp_path):
    """The tour draws in both daemons: the loading daemon's generator is its own, set again in the script."""
    from support.second_daemon import SecondDaemon
    from test_readme import section
    own = SecondDaemon(sh, "hist")
    try:
        m = own("set -e\ncd %s\n%s\necho $m" % (tmp_path, section("Sessions that outlive a daemon"))).split("\n")[-1]
        path = sh.tmp("s.py")
        own("torch history --python --for %s > %s" % (m, path))
        with open(path) as f:
            assert f.read().count("torch.set_rng_state(") == 2
        assert re.match(r"check: (\d+) of \1 ", _check(path))
    finally:
        own.stop()


def test_the_readme_train_on_data_tour_replays_bit_for_bit_through_its_fit_and_its_resume(sh, tmp_path):
    """Its .npy files, split, shuffling loaders, `data next` loop and `fit --val` (written as its loop); the
    resumed fit's checkpoint holds what the daemon holds, so it is the loop over the epochs left."""
    from test_readme import section
    tour = "\n".join(line for line in section("Train on data").split("\n") if not line.startswith("torch plot"))
    m = sh("set -e\ncd %s\n%s\necho $m" % (tmp_path, tour), timeout=300).split("\n")[-1]
    path, text = _script(sh, m)
    assert "torch.utils.data.random_split(" in text and "_Loader(" in text and "# the end of the epoch" in text
    assert "for _ in range(25):" in text and "for _epoch in range(5):  # torch fit --epochs 5\n" in text
    assert "for _epoch in range(5):  # torch fit --epochs 10, resumed at epoch 6 step " in text
    _check(path)


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


def test_a_fifo_put_where_a_loaded_file_was_does_not_hang_the_script_writer(sh):
    import torch
    path = sh.tmp("small.pt")
    torch.save(torch.arange(4.0), path)
    t = sh("torch load %s" % path)
    os.unlink(path)
    os.mkfifo(path)
    text = sh("torch history --python --for %s" % t, timeout=60)
    assert "torch.tensor([0.0, 1.0, 2.0, 3.0], dtype=torch.float32)" in text


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
