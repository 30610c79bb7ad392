"""`torch sweep` from Nushell: the trials are a table of records equal to bash's `--json` rows (the same seed
gives the same trials), so `where`/`sort-by` pick among them, and a refusal is a catchable error."""
import json

import torch

SWEEP = ("torch sweep --model \"sequential 'linear 4 {width}' relu 'linear {width} 3'\" --opt 'sgd --lr {lr}' "
         "--space 'width: [4, 8]; lr: loguniform(1e-2, 5e-1)' --trials 3 --epochs 2 --seed 4 --pruner none "
         "--loss cross_entropy --data $L")


def test_sweep_trials_are_records_equal_to_bash_json_rows(nu, sh):
    x, y = sh.put(torch.randn(32, 4)), sh.put(torch.randint(0, 3, (32,)))
    make = "torch data loader (torch data tensors %s %s) --batch_size 8 --shuffle --seed 2" % (x, y)
    bash = [json.loads(line) for line in sh("L=$(%s); %s --json" % (make.replace("(", "$(", 1), SWEEP)).splitlines()]
    rows = json.loads(nu("let L = (%s)\n%s | to json --raw | print" % (make, SWEEP)))
    keep = ("trial", "state", "loss", "epochs", "width", "lr")
    assert [{k: r[k] for k in keep} for r in rows] == [{k: r[k] for k in keep} for r in bash]
    best = json.loads(nu("let L = (%s)\n%s | sort-by loss | first | get trial | to json" % (make, SWEEP)))
    assert best == min(bash, key=lambda r: r["loss"])["trial"]


def test_a_refused_sweep_is_a_catchable_error_with_its_code(nu, sh):
    x, y = sh.put(torch.randn(8, 4)), sh.put(torch.randint(0, 3, (8,)))
    out = nu("""
let L = (torch data loader (torch data tensors %s %s) --batch_size 4)
let e = (try { torch sweep --model 'linear 4 3' --opt 'sgd --lr {lr}' --space 'lr: [0.1]; wd: [0]' --data $L; {} } catch {|e| $e })
print ({code: $e.details.code, msg: $e.msg} | to json --raw)
""" % (x, y))
    got = json.loads(out)
    assert got["code"] == "torchsh::bad_argument" and "wd" in got["msg"]
