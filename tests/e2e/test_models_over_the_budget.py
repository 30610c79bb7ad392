"""Modules and optimizers' state are admitted by the memory budget before they are built, whatever face builds
them: a layer of `nn sequential`'s words, a sweep's --model template, `model open` of a class with a huge size,
the JSON API; Adam's state at its creation and at its first step. Each is refused with out_of_memory (exit 4)
and its size, against a daemon in a 2.5 GiB memory cgroup with a 1 GiB budget, and the daemon lives on with
every object it held (the cgroup's OOM killer would show a miss)."""
import json

import pytest
import torch

from support.apicall import post
from support.cgroups import daemon_in_cgroup, oom_kills

GiB = 1 << 30
NET = ("import torch\nclass Net(torch.nn.Module):\n    def __init__(self, hidden=8):\n"
       "        super().__init__(); self.a = torch.nn.Linear(2, hidden)\n    def forward(self, x):\n"
       "        return self.a(x)\n")


@pytest.fixture(scope="module")
def daemon():
    """(shell, cgroup, objects made first with their values): the objects every test checks survive."""
    with daemon_in_cgroup(5 * GiB // 2, TORCHSH_MAX_MEMORY="1G") as (s, cgroup):
        t, m = s("torch randn '[1000]'"), s("torch nn linear 4 2")
        o = s("torch optim sgd %s --lr 0.1 --momentum 0.9" % m)
        kept = {"tensor": (t, s.fetch(t)), "model": (m, s("torch forward %s $(torch ones 1 4) | torch value" % m)),
                "optim": (o, s("torch optim info %s --json" % o)), "pid": status(s)["pid"]}
        yield s, cgroup, kept


def status(s):
    return json.loads(s("torch daemon status --json"))


def refused(r, *words):
    assert r.code == 4, (r.code, r.err)
    assert "[out_of_memory]" in r.err and "would exceed the memory budget of 1.0 GiB" in r.err, r.err
    for w in words:
        assert w in r.err, r.err


def everything_survived(daemon):
    s, cgroup, kept = daemon
    t, values = kept["tensor"]
    m, out = kept["model"]
    o, info = kept["optim"]
    assert torch.equal(s.fetch(t), values)
    assert s("torch forward %s $(torch ones 1 4) | torch value" % m) == out
    assert s("torch optim info %s --json" % o) == info
    assert status(s)["pid"] == kept["pid"] and oom_kills(cgroup) == 0


def test_a_layer_in_nn_sequentials_words_over_the_budget_is_refused_with_its_size(daemon):
    s = daemon[0]
    refused(s.run("torch nn sequential 'linear 4 1000000000'"), "nn sequential:",
            "Linear's parameters and buffers of 18.6 GiB")
    refused(s.run("torch nn sequential 'linear 4 8' relu 'linear 8 1000000000'"), "33.5 GiB")
    refused(s.run("torch nn sequential $(torch nn linear 4 2) 'embedding 1000000000000 4'"), "14.6 TiB")
    status_code, reply = post(s, "nn.sequential", {"args": ["linear 4 1000000000"]})
    assert status_code == 507 and reply["error"]["code"] == "out_of_memory", reply
    assert "18.6 GiB" in reply["error"]["message"]
    everything_survived(daemon)


def test_a_sized_nn_sequential_has_plain_pytorchs_weights_for_the_same_seed(daemon):
    """Sizing on the meta device draws no random number: the layers built after it are PyTorch's."""
    s = daemon[0]
    path = s.tmp("seq.pt")
    s("torch manual_seed 11 && torch nn save $(torch nn sequential 'linear 4 8' relu 'linear 8 2' "
      "'lstm 2 3') %s" % path)
    torch.manual_seed(11)
    nn = torch.nn
    expected = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2), nn.LSTM(2, 3)).state_dict()
    got = torch.load(path, weights_only=True)
    assert got.keys() == expected.keys() and all(torch.equal(got[k], expected[k]) for k in expected)
    everything_survived(daemon)


def test_a_model_opened_from_a_users_class_with_a_huge_size_is_refused(daemon):
    s = daemon[0]
    path = s.tmp("net.py")
    with open(path, "w") as f:
        f.write(NET)
    refused(s.run("torch model open %s:Net --args '{\"hidden\": 1000000000}'" % path),
            "model open:", "Net's parameters and buffers of 11.2 GiB")
    small = s("torch model open %s:Net --args '{\"hidden\": 3}'" % path)
    assert s("torch forward %s $(torch ones 1 2) | torch shape" % small) == "[1,3]"
    everything_survived(daemon)


def test_a_sweep_trial_with_a_huge_width_fails_alone_and_the_other_trains(daemon):
    s = daemon[0]
    out = s.run("L=$(torch data loader $(torch data tensors $(torch randn 32 4) $(torch randint 0 3 '[32]')) "
                "--batch_size 8); torch sweep --model \"sequential 'linear 4 {width}' relu 'linear {width} 3'\" "
                "--opt 'adam --lr 0.01' --data $L --loss cross_entropy --space 'width: [8, 1000000000]' "
                "--sampler grid --trials 2 --epochs 1 --json")
    assert out.code == 0, out.err
    rows = {r["width"]: r["state"] for r in map(json.loads, out.out.splitlines())}
    assert rows == {8: "complete", 1000000000: "failed"}, out.out
    assert "failed: Linear's parameters and buffers of 18.6 GiB would exceed" in out.err, out.err
    everything_survived(daemon)


def test_adams_state_is_refused_at_creation_near_the_budget_and_at_a_first_step_after_memory_was_taken(daemon):
    s = daemon[0]
    st = status(s)
    room = st["memory_budget_bytes"] - st["rss_bytes"]
    width = int((st["memory_budget_bytes"] * 0.9 - st["rss_bytes"]) / 4000)  # linear 1000 WIDTH: 90% of the budget
    big = s("torch nn linear 1000 %d --bias false" % width)
    refused(s.run("torch optim adam %s" % big), "optim adam:", "Adam's state of")  # 2x the weights
    sgd = s("torch optim sgd %s --lr 0.1" % big)  # no state; its first step's gradients (1x) do not fit
    step = "torch train_step %s %s $(torch randn 2 1000) $(torch randn 2 %d)"
    refused(s.run(step % (big, sgd, width)), "train_step:", "SGD's first step (its state and the gradients)")
    s("torch free %s %s" % (big, sgd))
    width = int(room * 0.2 / 4000)  # a model of a fifth of the room; Adam's state two fifths: admitted
    m = s("torch nn linear 1000 %d --bias false" % width)
    o = s("torch optim adam %s" % m)
    taken = s("torch zeros '[%d]'" % int(room * 0.3 / 4))
    output = "torch forward %s $(torch ones 1 1000) | torch sum | torch value" % m
    before = s(output)
    refused(s.run(step % (m, o, width)), "Adam's first step (its state and the gradients) of")
    assert s(output) == before and json.loads(s("torch optim info %s --json" % o))["state_tensors"] == 0  # no step
    s("torch free %s" % taken)
    s(step % (m, o, width))  # with the room back, it steps
    assert json.loads(s("torch optim info %s --json" % o))["state_tensors"] == 3  # step, exp_avg, exp_avg_sq
    s("torch free %s %s" % (m, o))
    everything_survived(daemon)
