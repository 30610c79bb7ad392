"""`torch session save DIR` / `session load DIR` and TORCHSH_PERSIST: a daemon's objects come back in a fresh
daemon under the same handles, bit for bit, and training goes on exactly as if nothing had happened."""
import json
import os

import pytest
import torch
from safetensors import safe_open

from support.second_daemon import SecondDaemon
from support.waiting import wait_until

pytestmark = pytest.mark.slow  # a slow family (the tier rule: tests/conftest.py)

BUILD = """m=$(torch nn sequential 'linear 3 5' 'batch_norm1d 5' tanh 'linear 5 1'); o=$(torch optim adam $m --lr 0.01)
s=$(torch sched step_lr $o --step_size 1 --gamma 0.5); X=$(torch randn 10 3); Y=$(torch randn 10 1)
L=$(torch data loader $(torch data tensors $X $Y) --batch_size 4 --shuffle --seed 7)
b=($(torch data next $L)); torch train_step $m $o ${b[0]} ${b[1]} --sched $s >/dev/null
x=$(torch randn 2 3 --requires_grad); y=$(torch mul $x 3); torch backward $(torch sum $y)
echo $m $o $s $L $x $y"""


def checkpoint(d, m, o, s):
    path = d.sh.tmp("state.safetensors")
    d("torch checkpoint save %s %s %s %s" % (path, m, o, s))
    with safe_open(path, framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys() if k != "rng.cpu"}, json.loads(f.metadata()["torchsh"])


def go_on(d, m, o, s, L):
    """What a user does next: the loader's next batch, one train_step on it; then every state."""
    b = d("torch data next %s" % L).split()
    d("torch train_step %s %s %s %s --sched %s" % (m, o, b[0], b[1], s))
    return [d.fetch(h) for h in b], checkpoint(d, m, o, s)


@pytest.fixture
def own(sh):
    d = SecondDaemon(sh, "own")
    try:
        yield d
    finally:
        d.stop()


def test_session_load_in_a_fresh_daemon_restores_every_handle_and_training_goes_on_bit_for_bit(own, tmp_path):
    m, o, s, L, x, y = own(BUILD).split()
    values = {h: own.fetch(h) for h in (x, y)}
    grad = own.fetch(own("torch grad %s" % x))
    held = own("torch tensors -q").split()
    assert own("torch session save %s" % (tmp_path / "sess")) == "saved %d objects to %s" % (len(held), tmp_path / "sess")
    want_batch, want_state = go_on(own, m, o, s, L)     # the reference: no save/load in between
    own("torch daemon stop")
    out = own("torch session load %s" % (tmp_path / "sess"))  # a fresh daemon starts here
    assert out == "restored %d objects; 2 tensors came back detached from their graph" % len(held)  # y, sum(y)
    with open(tmp_path / "sess" / "session.safetensors", "r+b") as f:
        f.truncate(100)  # written over in place: nothing restored may still read it (a mapped value: SIGBUS)
    assert own("torch tensors -q").split() == held
    assert all(torch.equal(own.fetch(h), v) for h, v in values.items())
    assert torch.equal(own.fetch(own("torch grad %s" % x)), grad)
    assert own("torch requires_grad %s" % x) == "true" and own("torch requires_grad %s" % y) == "false"
    got_batch, got_state = go_on(own, m, o, s, L)
    assert all(torch.equal(a, b) for a, b in zip(got_batch, want_batch))
    assert got_state[1] == want_state[1]
    assert all(torch.equal(got_state[0][k], want_state[0][k]) for k in want_state[0])


def test_new_handles_after_a_load_never_equal_a_restored_one(own, tmp_path):
    made = own("for i in 1 2 3; do torch ones 1; done; torch session save %s >/dev/null" % (tmp_path / "s")).split()
    own("torch daemon stop")
    own("torch session load %s" % (tmp_path / "s"))
    new = own("torch ones 1")
    assert new not in made and own("torch tensors -q").split() == made + [new]


def test_a_scope_comes_back_with_its_members(own, tmp_path):
    scope = own("torch scope begin")
    inside = own("torch zeros 2", env={"TORCHSH_SCOPE": scope})
    outside = own("torch zeros 3; torch session save %s >/dev/null" % (tmp_path / "s"))
    own("torch daemon stop")
    own("torch session load %s" % (tmp_path / "s"))
    own("torch scope end %s" % scope)
    assert own("torch tensors -q") == outside and inside != outside


def test_names_come_back_with_their_objects_and_reflog(own, tmp_path):
    old = own("torch ones 2 --name enc")
    new = own("torch zeros 3 --name other >/dev/null; torch name $(torch zeros 2) @enc --force; torch names @enc --json")
    saved = json.loads(new)[0]
    own("torch session save %s >/dev/null" % (tmp_path / "s"))
    own("torch daemon stop")
    own("torch session load %s" % (tmp_path / "s"))
    back = json.loads(own("torch names @enc --json"))[0]
    assert (back["handle"], back["reflog"]) == (saved["handle"], [old])
    assert own("torch value @enc~1") == "[1.0,1.0]" and own("torch names -q").split() == ["@enc", "@other"]


def test_a_torchscript_module_is_named_and_the_rest_is_saved(own, tmp_path):
    torch.jit.script(torch.nn.Linear(2, 1)).save(str(tmp_path / "lin.ts"))
    j = own("torch nn jit_load %s 2>/dev/null" % (tmp_path / "lin.ts"))
    x = own("torch ones 2")
    r = own.run("torch session save %s" % (tmp_path / "s"))
    assert r.code == 0 and r.out == "saved 1 objects to %s\n" % (tmp_path / "s")
    assert r.err.count("\n") == 1 and j in r.err and "TorchScript" in r.err
    own("torch daemon stop")
    own("torch session load %s" % (tmp_path / "s"))
    assert own("torch tensors -q") == x
    assert "[stale_handle]" in own.run("torch nn info %s" % j).err


def test_loading_a_session_into_a_daemon_that_holds_its_handles_changes_nothing(own, tmp_path):
    x = own("torch ones 2; torch session save %s >/dev/null" % (tmp_path / "s"))
    r = own.run("torch session load %s" % (tmp_path / "s"))
    assert r.code == 2 and "[bad_argument]" in r.err and x in r.err
    assert own("torch tensors -q") == x


def test_a_folder_without_a_session_is_a_file_error(own, tmp_path):
    r = own.run("torch session load %s" % tmp_path)
    assert r.code == 6 and "[file_error]" in r.err and r.err.count("\n") == 1


def test_with_torchsh_persist_every_handle_survives_the_idle_timeout(sh, tmp_path):
    d = SecondDaemon(sh, "persist", env={"TORCHSH_PERSIST": str(tmp_path / "keep"), "TORCHSH_TTL": "2s"})
    try:
        m, o, s, L, x, y = d(BUILD).split()
        before = {h: d.fetch(h) for h in (x, y)}
        pid = d("torch daemon status --json | python -c 'import json,sys; print(json.load(sys.stdin)[\"pid\"])'")
        assert wait_until(lambda: not os.path.exists(d.socket), timeout=60)   # the TTL ran out
        assert os.path.exists(tmp_path / "keep" / "session.safetensors")
        assert all(torch.equal(d.fetch(h), v) for h, v in before.items())    # this command started a new daemon
        assert d("torch daemon status --json | python -c 'import json,sys; print(json.load(sys.stdin)[\"pid\"])'") != pid
        held = d("torch tensors -q").split()
        assert all(h in held for h in (m, o, s, L, x, y))
        d("torch train_step %s %s $(torch randn 4 3) $(torch randn 4 1) --sched %s" % (m, o, s))
    finally:
        d.stop()


def test_a_restart_keeps_the_persistence_the_daemon_was_started_with(sh, tmp_path):
    """`torch daemon restart` from a shell without TORCHSH_PERSIST: the new daemon still persists to the old
    daemon's folder (as it keeps the TTL and the memory budget), so the session comes back."""
    d = SecondDaemon(sh, "restarts", env={"TORCHSH_PERSIST": str(tmp_path / "keep")})
    try:
        x = d("torch randn 3")
        before = d.fetch(x)
        d("env -u TORCHSH_PERSIST torch daemon restart >/dev/null")
        path = sh.tmp("after.pt")
        d("env -u TORCHSH_PERSIST torch save %s %s" % (x, path))
        assert torch.equal(torch.load(path, weights_only=True), before)
        d("env -u TORCHSH_PERSIST torch daemon restart >/dev/null")
        d("env -u TORCHSH_PERSIST torch shape %s" % x)   # and again: the second daemon kept it too
    finally:
        d.stop()


def test_distributions_come_back_with_the_parameters_they_were_given(own, tmp_path):
    d, c = own("""d=$(torch dist normal $(torch zeros 2) $(torch ones 2))
        c=$(torch dist categorical --probs $(torch tensor '[0.2,0.3,0.5]')); torch dist sample $c >/dev/null
        echo $d $c""").split()
    show = "for h in %s %s; do torch value $(torch dist log_prob $h $(torch tensor 1)); done" % (d, c)
    before = own(show)
    own("torch session save %s >/dev/null; torch daemon stop" % (tmp_path / "s"))
    own("torch session load %s" % (tmp_path / "s"))
    assert own(show) == before


def test_objects_without_values_do_not_stop_a_save(own, tmp_path):
    """A meta tensor or model comes back by its shape; a lazy module's uninitialized parameter handle is named."""
    a, m, lazy, p, x = own("""a=$(torch ones 2 --device meta); m=$(torch nn linear 2 3 --device meta)
        l=$(torch nn lazy_linear 3); p=$(torch nn parameters $l | head -1); echo $a $m $l $p $(torch ones 2)""").split()
    r = own.run("torch session save %s" % (tmp_path / "s"))
    assert r.code == 0 and r.out.startswith("saved 4 objects") and p in r.err
    own("torch daemon stop")
    own("torch session load %s" % (tmp_path / "s"))
    assert own("torch tensors -q").split() == [a, m, lazy, x]
    assert own("torch shape %s" % a) == "[2]" and own("torch nn info %s --json" % m).count('"meta"')
    assert own("torch forward %s $(torch ones 4 5) | torch shape" % lazy) == "[4,3]"


def test_a_model_opened_from_the_users_file_comes_back_by_its_recipe_bit_for_bit(own, tmp_path):
    """`model open FILE.py:CLASS --args …` is rebuilt from its file, class and arguments (a FILE.pt2 from its
    archive); its weights and grads are the saved ones, bit for bit."""
    from support.usernets import write_net
    write_net(str(tmp_path / "net"))
    exported = torch.export.export(torch.nn.Linear(3, 2), (torch.randn(4, 3),))
    torch.export.save(exported, str(tmp_path / "net" / "lin.pt2"))
    m, o, p, x = own("""cd %s && m=$(torch model open mynet.py:Net --args '{"hidden": 6}') && o=$(torch optim sgd $m --lr 0.1)
        torch train_step $m $o --loss mse_loss $(torch randn 4 3) $(torch randn 4 2) >/dev/null
        echo $m $o $(torch model open lin.pt2) $(torch randn 4 3)""" % (tmp_path / "net")).split()
    forward = "torch value $(torch forward %s %s)" % (p, x)
    out = own(forward)
    grad = "torch grad $(torch nn parameters %s | head -1)" % m
    before, _ = checkpoint(own, m, o, "")
    grad_before = own.fetch(own(grad))
    r = own.run("torch session save %s" % (tmp_path / "s"))
    assert r.code == 0 and m in own("torch tensors -q") and r.err == ""
    own("torch daemon stop")
    own("torch session load %s" % (tmp_path / "s"), cwd=str(tmp_path))  # another folder: the file is found by its path
    after, _ = checkpoint(own, m, o, "")
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    assert torch.equal(own.fetch(own(grad)), grad_before) and own(forward) == out
