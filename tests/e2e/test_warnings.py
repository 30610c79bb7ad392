"""PyTorch's warnings reach the caller: one stderr line per distinct warning, every time, through the
client and the fast bash path; stdout and exit status unchanged; the JSON API returns them as data."""

import pytest
import torch
from support.apicall import post

LINE = "torch: nn.functional.mse_loss: warning: Using a target size (torch.Size([64])) that is different " \
       "to the input size (torch.Size([64, 1]))."


def test_broadcast_warning_of_mse_loss_is_one_stderr_line_every_time(sh):
    a, b = sh.put(torch.randn(64, 1)), sh.put(torch.randn(64))
    for _ in range(2):  # not only the first time (Python shows a warning once per code location)
        r = sh.run("torch mse_loss %s %s" % (a, b))
        assert r.code == 0
        assert r.out.strip().startswith("tensor://") and "\n" not in r.out.strip()
        assert r.err.startswith(LINE) and r.err.count("\n") == 1


def test_warning_line_comes_through_the_fast_bash_path(sh):
    a, b = sh.put(torch.randn(64, 1)), sh.put(torch.randn(64))
    r = sh.run('eval "$(torch init bash)"; torch mse_loss %s %s; echo "rc=$?"' % (a, b))
    assert r.err.startswith(LINE) and r.err.count("\n") == 1
    assert r.out.split("\n")[1] == "rc=0"


def test_an_op_without_warnings_writes_nothing_to_stderr(sh):
    a = sh.put(torch.randn(64))
    r = sh.run("torch mse_loss %s %s" % (a, a))
    assert r.code == 0 and r.err == ""


def test_value_from_an_op_that_warned_equals_pytorch(sh):
    x, y = torch.randn(64, 1), torch.randn(64)
    got = sh.fetch(sh("torch mse_loss %s %s 2>/dev/null" % (sh.put(x), sh.put(y))))
    with pytest.warns(UserWarning, match="different to the input size"):
        want = torch.nn.functional.mse_loss(x, y)
    assert torch.equal(got, want)


def test_api_reply_carries_the_warnings_beside_the_result(sh):
    a, b = sh.put(torch.randn(64, 1)), sh.put(torch.randn(64))
    status, out = post(sh, "mse_loss", {"args": [a, b]})
    assert status == 200 and out["result"].startswith("tensor://")
    assert len(out["warnings"]) == 1 and out["warnings"][0].startswith(LINE.split("warning: ")[1])
    status, out = post(sh, "mse_loss", {"args": [a, a]})
    assert status == 200 and "warnings" not in out


def test_a_verb_passes_on_the_warnings_of_the_ops_it_runs(sh):
    """train_step with a [64] target for a [64,1] output: the loss's broadcasting warning, the loss on stdout."""
    x, y = sh.put(torch.randn(64, 2)), sh.put(torch.randn(64))
    m = sh("torch nn linear 2 1")
    opt = sh("torch optim sgd %s --lr 0.01" % m)
    r = sh.run("torch train_step %s %s %s %s --loss mse_loss" % (m, opt, x, y))
    assert r.code == 0 and float(r.out) >= 0
    assert r.err.startswith("torch: train_step: warning: Using a target size") and r.err.count("\n") == 1
