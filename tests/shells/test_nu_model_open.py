"""Nushell: `torch model open` takes --args as a record, its handle forwards as the class built in Python does,
and a refusal is a catchable error with its code."""
import torch

from support.usernets import python_net, write_net


def test_nu_model_open_takes_a_record_of_args_and_refuses_with_a_code(nu, sh):
    folder = sh.tmp("nu-net")
    path = write_net(folder)
    x = torch.randn(3, 3)
    got = nu.json("""
cd '%s'
torch manual_seed 0
let m = (torch model open mynet.py:Net --args {hidden: 5})
{out: (torch forward $m '%s'),
 err: (try { torch model open mynet.py:Plain } catch {|e| {msg: $e.msg, code: $e.details.code} })}"""
                  % (folder, sh.put(x)))
    torch.manual_seed(0)
    assert torch.equal(sh.fetch(got["out"]), python_net(path, hidden=5)(x).detach())
    assert got["err"]["code"] == "torchsh::bad_argument"
    assert "Plain, which is not a torch.nn.Module class" in got["err"]["msg"]
