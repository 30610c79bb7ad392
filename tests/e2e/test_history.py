"""`torch history`: the requests that changed the daemon's state, listed (bounded, counted, kept with a
session and across a restart) and written as a plain PyTorch script (`--python`, `--for HANDLE`) that
reproduces the daemon's objects bit for bit (`python s.py --check`): autograd and optimizer sessions,
their names, repeated requests as loops. The replay of fits: test_history_fit.py; of files read:
test_history_files.py; of the examples and the README's tours: test_history_examples.py."""
import json
import os
import re

import pytest

from support import apicall
from support.history_replay import check as _check, script as _script


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
