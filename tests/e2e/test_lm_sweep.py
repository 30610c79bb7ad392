"""`torch sweep --model "lm lora $m --r {r} …"`: trials of LoRA adapters over r and lr, trained one at a time; each
trial's losses equal a peft + plain PyTorch loop's (the in-process oracle) and its run alone (`torch manual_seed
SEED; a=$(torch lm lora …); torch fit $a …`) bit for bit; the sweep takes every trial's adapter out of the base
(the adapters and the active one as before, the base's logits unchanged), and a kept trial's best.safetensors
loads into the adapter its words make again."""
import json
import os

import pytest
import torch
from support import tinylm, tinylora

SEQ, BATCH = 40, 2
MODEL = "lm lora $m --r {r} --alpha 16 --targets q_proj,v_proj"


def epoch_rows(folder):
    with open(os.path.join(folder, "metrics.jsonl")) as f:
        return [r for r in map(json.loads, f) if r["kind"] == "epoch"]


@pytest.fixture(scope="module")
def swept(sh):
    """(m, L, log, rows, the lm's info before and after, a probe's logits before and after) of a 3-trial sweep
    over r and lr, on a model holding an adapter of its own that is active and a probe adapter (lora_B zero: its
    logits are the base's)."""
    log = sh.tmp("lm-sweep")
    m, L, probe, ids = sh("m=$(torch lm open %s); L=$(torch data open %s --format chat --tokenizer $m --seq_len %d | "
                          "torch data loader - --batch_size %d); mine=$(torch lm lora $m --name mine); "
                          "torch lm adapter use $m $mine >/dev/null; echo $m $L $(torch lm lora $m --name probe) "
                          "$(torch tensor '[[3, 89, 87, 271]]' --dtype int64)"
                          % (tinylm.folder("llama"), tinylora.chat_file(sh.folder), SEQ, BATCH)).split()
    before, logits_before = json.loads(sh("torch lm info " + m)), sh.fetch(sh("torch forward %s %s" % (probe, ids)))
    out = sh("m=%s; torch sweep --model \"%s\" --opt 'adamw --lr {lr}' --space 'r: [4, 8]; lr: loguniform(1e-4, 1e-2)' "
             "--trials 3 --data %s --loss lm --epochs 1 --seed 0 --log %s --json" % (m, MODEL, L, log))
    after, logits_after = json.loads(sh("torch lm info " + m)), sh.fetch(sh("torch forward %s %s" % (probe, ids)))
    return m, L, log, [json.loads(r) for r in out.splitlines()], (before, after), (logits_before, logits_after)


def oracle(seed, r, lr):
    """(the epoch's mean loss, the trained LoRA weights in peft's saved layout) of a peft + plain PyTorch loop."""
    from torchsh.lm import library
    losses, model = tinylora.peft_fit(seed, lr=lr, r=r, seq_len=SEQ, batch_size=BATCH)
    return losses[0], library.peft().get_peft_model_state_dict(model, adapter_name="lora1")


def trial_of(log, number):
    folder = os.path.join(log, "trial_%04d" % number)
    return folder, json.load(open(os.path.join(folder, "run.json")))["trial"]


@pytest.mark.slow
def test_each_trial_tries_its_r_and_lr_and_its_losses_equal_a_peft_and_plain_pytorch_loop(swept):
    _, _, log, rows, *_ = swept
    assert [r["trial"] for r in rows] == [0, 1, 2] and {r["state"] for r in rows} == {"complete"}
    assert {r["r"] for r in rows} <= {4, 8} and len({r["lr"] for r in rows}) == 3
    for row in rows:
        _, trial = trial_of(log, row["trial"])
        assert trial["params"] == {"r": row["r"], "lr": row["lr"]}
        assert row["loss"] == oracle(trial["seed"], row["r"], row["lr"])[0]


@pytest.mark.slow
def test_a_trial_repeats_alone_bit_for_bit_as_its_run_json_says(sh, swept):
    m, L, log, rows, *_ = swept
    for number in (0, 2):
        folder, trial = trial_of(log, number)
        assert trial["model"] == MODEL.replace("$m", m).replace("{r}", str(rows[number]["r"]))
        script = ("torch manual_seed %d; a=$(torch %s); torch fit $a $(torch optim %s $a %s) %s --loss lm --epochs 1 "
                  "--json" % (trial["seed"], trial["model"], trial["opt"].split()[0], " ".join(trial["opt"].split()[1:]), L))
        alone = [json.loads(line) for line in sh(script).splitlines()]
        assert [(r["loss"], r["lr"]) for r in alone] == [(r["loss"], r["lr"]) for r in epoch_rows(folder)]


@pytest.mark.slow
def test_the_sweep_takes_each_trials_adapter_out_and_leaves_the_base_and_its_active_adapter_as_before(swept):
    *_, (before, after), (logits_before, logits_after) = swept
    assert before["adapters"] == after["adapters"] == ["mine", "probe"]
    assert before["active_adapter"] == after["active_adapter"] == "mine"
    assert after["parameters"] == before["parameters"] and after["memory"] == before["memory"]
    assert torch.equal(logits_before, logits_after)  # the base's weights, through an adapter made before


@pytest.mark.slow
def test_a_kept_trials_best_weights_load_into_the_adapter_its_words_make_again(sh, swept, tmp_path):
    from safetensors.torch import load_file
    _, _, log, rows, *_ = swept
    best = min(rows, key=lambda r: r["loss"])
    folder, trial = trial_of(log, best["trial"])
    sh("a=$(torch %s --name kept); torch checkpoint load %s $a >/dev/null; torch lm save $a %s >/dev/null"
       % (trial["model"], os.path.join(folder, "best.safetensors"), tmp_path / "kept"))
    saved = load_file(str(tmp_path / "kept/adapter_model.safetensors"))
    _, want = oracle(trial["seed"], best["r"], best["lr"])
    assert sorted(saved) == sorted(want)  # the oracle's PeftModel keys: base_model.model.model.layers…
    assert all(torch.equal(saved[k], v) for k, v in want.items())
