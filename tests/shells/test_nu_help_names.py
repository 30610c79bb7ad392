"""Issue 11 §3/§4 in Nushell: group listings and group errors, Tensor-method spellings, print of any handle."""
import json

import torch


def test_unknown_word_after_a_group_names_the_group_and_where_the_word_is(nu):
    r = nu.run("torch nn sgd")
    assert r.code != 0
    text = " ".join(r.err.split())
    assert "`torch nn` has no command 'sgd'" in text and "`torch optim sgd`" in text and "torchsh::unknown_op" in text


def test_a_group_alone_lists_its_commands(nu):
    out = nu("torch daemon --help | str join (char nl) | print")
    assert out.startswith("usage: torch daemon COMMAND")
    for word in ("status", "start", "stop", "restart", "ttl", "log"):
        assert "\n  %s " % word in out


def test_method_spellings_equal_pytorch(nu, sh):
    x = torch.tensor([[1.5, -2.0, 3.25], [0.0, 4.0, -6.5]])
    h = sh.put(x)
    out = json.loads(nu("{size: (torch size %s), dim: (torch dim %s), long: (torch long %s), t: ('%s' | torch T),"
                        " list: (torch tolist %s)} | to json --raw | print" % (h, h, h, h, h)))
    assert out["size"] == list(x.size()) and out["dim"] == x.dim() and out["list"] == x.tolist()
    assert torch.equal(sh.fetch(out["long"]), x.long())
    assert torch.equal(sh.fetch(out["t"]), x.T)


def test_print_of_a_model_and_an_optimizer(nu):
    out = nu("let m = (torch nn linear 3 2); let o = (torch optim sgd $m --lr 0.1);"
             " print (torch print $m); print (torch print $o)")
    assert str(torch.nn.Linear(3, 2)) in out
    assert repr(torch.optim.SGD(torch.nn.Linear(3, 2).parameters(), lr=0.1)) in out
