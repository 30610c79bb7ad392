"""`torch cp H… --to CTX` and `session push`: the client's relay (copyrelay.run) streams a bundle from one
daemon to another (here a second daemon on paths.context_socket("t2")); what arrives equals what left."""
from torchsh import paths
import json
import subprocess
import sys

import pytest
import torch
from safetensors import safe_open

from support.imports import extra_imports
from support.second_daemon import SecondDaemon


@pytest.fixture
def t2(sh):
    d = SecondDaemon(sh)
    d("torch daemon start")
    try:
        yield d
    finally:
        d.stop()


def relay(sh, dst, handles, keep=False, context="t2", force=False):
    """copyrelay.run in a process of its own, as the client runs it: (stdout, stderr, exit status)."""
    code = ("import sys; from torchsh.client import copyrelay; sys.exit(copyrelay.run(sys.argv[1], sys.argv[2], "
            "sys.argv[4:], keep=sys.argv[3] == '1', context=%r, force=%r))" % (context, force))
    p = subprocess.run([sys.executable, "-c", code, sh.socket, dst.socket, "1" if keep else "0"] + handles,
                       capture_output=True, text=True)
    return p.stdout, p.stderr, p.returncode


def checkpoint(run, tmp, m, o, s):
    """Model, optimizer and scheduler state as one checkpoint's tensors (RNG left out) and metadata."""
    path = tmp("state.safetensors")
    run("torch checkpoint save %s %s %s %s" % (path, m, o, s))
    with safe_open(path, framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys() if k != "rng.cpu"}, json.loads(f.metadata()["torchsh"])


def trained(sh):
    """A model, Adam with state, a StepLR two steps in, and a tensor with a gradient, on sh's daemon."""
    return sh("""m=$(torch nn sequential 'linear 3 5' tanh 'linear 5 1'); o=$(torch optim adam $m --lr 0.01)
        s=$(torch sched step_lr $o --step_size 1 --gamma 0.5); x=$(torch randn 4 3 --requires_grad)
        for i in 1 2; do torch train_step $m $o $x $(torch ones 4 1) --sched $s >/dev/null; done
        torch backward $(torch sum $(torch mul $x $x)); echo $m $o $s $x""").split()


def unnamed(handle):
    """tensor://t2/k3f00012 -> tensor://k3f00012: the handle as the destination daemon knows it."""
    kind, _, rest = handle.partition("://")
    return "%s://%s" % (kind, rest.split("/", 1)[-1])


def test_cp_brings_a_tensor_a_model_its_optimizer_and_scheduler_with_equal_state(sh, t2):
    m, o, s, x = trained(sh)
    out, err, code = relay(sh, t2, [x, m, o, s])
    assert code == 0, err
    new = out.split()
    assert [h.split("://")[0] for h in new] == ["tensor", "nn", "optim", "sched"]
    assert all(h.split("://")[1].startswith("t2/") for h in new)   # the context's name is in the handles
    nx, nm, no, ns = (unnamed(h) for h in new)
    assert torch.equal(t2.fetch(nx), sh.fetch(x))
    assert torch.equal(t2.fetch(t2("torch grad %s" % nx)), sh.fetch(sh("torch grad %s" % x)))
    here, there = checkpoint(sh, sh.tmp, m, o, s), checkpoint(t2, sh.tmp, nm, no, ns)
    assert here[1] == there[1] and here[0].keys() == there[0].keys()
    assert all(torch.equal(here[0][k], there[0][k]) for k in here[0])
    # and they train on alike: one more step on each side gives equal parameters
    for run, (mm, oo, ss) in ((sh, (m, o, s)), (t2, (nm, no, ns))):
        run("torch manual_seed 3; torch train_step %s %s $(torch randn 4 3) $(torch ones 4 1) --sched %s" % (mm, oo, ss))
    here, there = checkpoint(sh, sh.tmp, m, o, s), checkpoint(t2, sh.tmp, nm, no, ns)
    assert all(torch.equal(here[0][k], there[0][k]) for k in here[0])


def test_cp_brings_a_dataset_and_a_loader_mid_epoch_that_go_on_with_the_same_batches(sh, t2):
    d, L = sh("d=$(torch data tensors $(torch randn 10 2) $(torch arange 10)); "
              "L=$(torch data loader $d --batch_size 4 --shuffle --seed 3); torch data next $L >/dev/null; echo $d $L").split()
    out, err, code = relay(sh, t2, [d, L])
    assert code == 0, err
    nd, nL = (unnamed(h) for h in out.split())
    assert t2("torch data info %s --json" % nd) == sh("torch data info %s --json" % d)
    for step in range(4):  # the rest of the epoch, its end, then the next epoch's first batch: alike on both
        here, there = sh.run("torch data next %s" % L), t2.run("torch data next %s" % nL)
        assert here.code == there.code == (1 if step == 2 else 0)
        assert all(torch.equal(sh.fetch(a), t2.fetch(b)) for a, b in zip(here.out.split(), there.out.split()))


def test_cp_of_an_optimizer_without_its_model_is_refused_before_anything_moves(sh, t2):
    m, o, s, x = trained(sh)
    r = sh.run("torch cp %s --to t2" % o)
    assert r.code == 2 and "[not_portable]" in r.err and "model" in r.err
    out, err, code = relay(sh, t2, [o])
    assert code == 2 and "[not_portable]" in err and out == ""
    assert t2("torch tensors -q") == ""


def test_cp_of_a_torchscript_module_is_refused_with_not_portable(sh, tmp_path):
    torch.jit.script(torch.nn.Linear(2, 1)).save(str(tmp_path / "lin.ts"))
    r = sh.run("torch cp $(torch nn jit_load %s 2>/dev/null) --to t2" % (tmp_path / "lin.ts"))
    assert r.code == 2 and "[not_portable]" in r.err and "TorchScript" in r.err


@pytest.mark.slow
def test_session_push_keeps_every_handle_and_scope(sh, t2):
    fresh = SecondDaemon(sh, "src")   # a source daemon of its own: push takes all it holds
    fresh("torch daemon start")
    try:
        m = fresh("torch nn linear 3 2")
        scope = fresh("torch scope begin")
        x = fresh("torch randn 2 3", env={"TORCHSH_SCOPE": scope})
        fresh("torch name %s @push/m" % m)
        t2("torch zeros 1 --name push/m")
        out, err, code = relay(fresh, t2, fresh("torch tensors -q").split(), keep=True, context=None)
        assert code == 3 and "[name_in_use]" in err and out == ""   # @push/m names another object there
        t2("torch free @push/m")
        out, err, code = relay(fresh, t2, fresh("torch tensors -q").split(), keep=True, context=None)
        assert code == 0, err
        assert out.split() == [m, x]
        assert t2("torch names @push/m --json").count(m) == 1     # the name came along
        assert torch.equal(t2.fetch(x), fresh.fetch(x))
        t2("torch scope end %s" % scope)        # the scope came along: ending it there frees x
        assert t2("torch tensors -q") == m
    finally:
        fresh.stop()


def test_cp_brings_names_and_a_name_taken_there_is_name_in_use_until_force(sh, t2):
    x = sh("torch tensor '[1.0,2.0]' --name cp/x")
    sh("torch name %s @cp/ttl --ttl 1h" % x)
    out, err, code = relay(sh, t2, [x])
    assert code == 0, err
    nx = unnamed(out.strip())
    assert t2("torch names '@cp/*' -q").split() == ["@cp/ttl", "@cp/x"]
    assert t2("torch value @cp/x") == "[1.0,2.0]" and json.loads(t2("torch names @cp/x --json"))[0]["handle"] == nx
    assert 3500 < json.loads(t2("torch names @cp/ttl --json"))[0]["ttl_s"] <= 3600   # the TTL came along
    y = sh("torch tensor '[5.0]'")
    sh("torch name %s @cp/x --force" % y)
    out, err, code = relay(sh, t2, [y])          # @cp/x names nx there: refused, nothing copied
    assert code == 3 and "[name_in_use]" in err and nx in err and out == ""
    assert len(t2("torch tensors -q").split()) == 1
    out, err, code = relay(sh, t2, [y], force=True)
    assert code == 0, err
    assert t2("torch value @cp/x") == "[5.0]" and t2("torch value @cp/x~1") == "[1.0,2.0]"


def test_cp_force_is_a_flag_of_cp_and_session_push(sh):
    for op in ("cp", "session push"):
        assert "--force" in sh("torch %s --help" % op)


def test_relay_to_a_daemon_that_is_not_there_fails_with_one_line(sh, tmp_path):
    x = sh("torch ones 2")
    gone = SecondDaemon(sh, "gone")
    try:
        out, err, code = relay(sh, gone, [x])
    finally:
        gone.stop()
    assert code == 5 and err.count("\n") == 1 and "[daemon_unavailable]" in err


def test_copyrelay_imports_only_builtins_and_the_client_wire():
    extra = extra_imports("torchsh.client.copyrelay")
    assert extra <= {"torchsh", "torchsh.client", "torchsh.client.copyrelay", "torchsh.client.http", "torchsh.protocol",
                     "torchsh.paths", "torchsh.trust", "torchsh.client.wire", "_socket"}, extra


@pytest.mark.slow
def test_the_json_face_refuses_cp_and_push_and_names_the_cli(sh):
    """A daemon reaches only itself: over the JSON API `cp` would only echo the source handles, so a caller that
    lists neither the copy reply nor handover is refused before anything runs (torch.nu lists handover)."""
    from support.apicall import post
    t = sh("torch ones 2")
    for op, body in (("cp", {"args": [t], "kwargs": {"to": "t2"}}), ("session.push", {"kwargs": {"to": "t2"}})):
        status, reply = post(sh, op, body)
        assert status == 409 and reply["error"]["code"] == "needs_client", reply
        assert "`torch` client" in reply["error"]["hint"]
