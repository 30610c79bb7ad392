"""Nushell: `torch nn load`'s diff is a record (missing and unexpected lists, mismatched a table), and a
strict refusal is a catchable error with its code."""
import torch


def test_nu_nn_load_diff_is_a_record_and_a_refusal_an_error(nu, sh):
    path = sh.tmp("ddp.pt")
    torch.save({"module.0.weight": torch.ones(4, 3), "module.0.bias": torch.ones(5), "module.head": torch.ones(1)},
               path)
    got = nu.json("""
let m = (torch nn sequential 'linear 3 4' relu 'linear 4 2')
{diff: (torch nn load $m '%s' --strip [module.] --partial),
 err: (try { torch nn load $m '%s' --strip [module.] } catch {|e| {msg: $e.msg, code: $e.details.code} })}"""
                  % (path, path))
    assert got["diff"] == {"file": path, "loaded": 1, "of": 4, "missing": ["2.weight", "2.bias"],
                           "unexpected": ["head"], "mismatched": [{"key": "0.bias", "file": [5], "model": [4]}]}
    assert got["err"]["code"] == "torchsh::state_mismatch"
    assert "2 missing [2.weight, 2.bias], 1 unexpected [head]" in got["err"]["msg"]
