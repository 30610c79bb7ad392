"""`torch fit $a $o $L --loss lm` of a LoRA adapter over `data open --format chat` items: its epoch losses equal
a peft + plain PyTorch loop's bit for bit (transformers' own loss, labels=…, as the oracle); --resume auto
continues an interrupted run to the weights of an uninterrupted one; --loss lm on anything but logits and
labels is refused before a step."""
import json

import pytest
from safetensors.torch import load_file
from support import tinylm, tinylora

from torchsh import protocol

SEQ, BATCH = 40, 2


def _daemon_fit(sh, seed, fit_flags, epochs=2):
    folder = tinylm.folder("llama")
    out = sh("m=$(torch lm open %s); torch manual_seed %d; a=$(torch lm lora $m --r 8 --alpha 16 --targets q_proj,v_proj)\n"
             "L=$(torch data open %s --format chat --tokenizer $m --seq_len %d | torch data loader - --batch_size %d)\n"
             "torch fit $a $(torch optim adamw $a --lr 1e-2) $L --loss lm --epochs %d --json %s; echo $a"
             % (folder, seed, tinylora.chat_file(sh.folder), SEQ, BATCH, epochs, fit_flags))
    *rows, adapter = out.split("\n")
    return [json.loads(r) for r in rows], adapter


@pytest.mark.slow
def test_a_lora_fits_epoch_losses_equal_a_peft_and_plain_pytorch_loop_bit_for_bit(sh):
    import torch
    rows, _ = _daemon_fit(sh, 7, "")
    model, tokenizer = tinylora.peft_model(7)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    losses = []
    for _ in range(2):
        total, n = 0.0, 0
        for x, y in tinylora.batches(tokenizer, SEQ, BATCH):
            optimizer.zero_grad()
            loss = model(input_ids=x, labels=y).loss
            loss.backward()
            optimizer.step()
            total, n = total + loss.item() * len(x), n + len(x)
        losses.append(total / n)
    assert [r["loss"] for r in rows] == losses
    assert losses[1] < losses[0]


@pytest.mark.slow
def test_an_interrupted_lora_fit_resumed_auto_ends_with_the_weights_of_one_uninterrupted(sh, tmp_path):
    _, whole = _daemon_fit(sh, 3, "", epochs=3)
    _, cut = _daemon_fit(sh, 3, "--log %s --max_steps 3 >/dev/null" % (tmp_path / "run"), epochs=3)
    sh("torch fit %s $(torch optim adamw %s --lr 1e-2) $(torch data loader $(torch data open %s --format chat "
       "--tokenizer $(torch lm open %s) --seq_len %d) --batch_size %d) --loss lm --epochs 3 --log %s --resume auto "
       ">/dev/null" % (cut, cut, tinylora.chat_file(sh.folder), tinylm.folder("llama"), SEQ, BATCH, tmp_path / "run"))
    sh("torch lm save %s %s; torch lm save %s %s" % (whole, tmp_path / "w", cut, tmp_path / "c"))
    a, b = load_file(str(tmp_path / "w/adapter_model.safetensors")), load_file(str(tmp_path / "c/adapter_model.safetensors"))
    assert a.keys() == b.keys() and all(a[k].equal(b[k]) for k in a)


def test_loss_lm_on_a_model_that_gives_no_logits_per_position_is_refused_before_a_step(sh):
    r = sh.run("m=$(torch nn linear 4 3); L=$(torch data loader $(torch data tensors $(torch randn 8 4) "
               "$(torch zeros 8 --dtype int64)) --batch_size 4); torch fit $m $(torch optim sgd $m) $L --loss lm")
    assert r.code == protocol.exit_status("shape_mismatch") and "--loss lm" in r.err, r.err


@pytest.mark.slow
def test_perplexity_and_tokens_are_the_epochs_nll_per_counted_token_and_its_count(sh):
    import math

    import torch
    import torch.nn.functional as F
    rows, _ = _daemon_fit(sh, 5, "--metrics perplexity,tokens", epochs=1)
    model, tokenizer = tinylora.peft_model(5)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    nll, count = 0.0, 0
    for x, y in tinylora.batches(tokenizer, SEQ, BATCH):
        optimizer.zero_grad()
        out = model(input_ids=x, labels=y)
        shifted = F.pad(y, (0, 1), value=-100)[..., 1:]
        nll += F.cross_entropy(out.logits.detach().float().flatten(0, -2), shifted.flatten(), ignore_index=-100,
                               reduction="sum").double().item()
        count += int((shifted != -100).sum())
        out.loss.backward()
        optimizer.step()
    row = rows[0]
    assert row["tokens"] == count
    assert row["perplexity"] == pytest.approx(math.exp(nll / count), rel=1e-12)
    assert row["tokens_per_s"] == pytest.approx(count / row["seconds"])
    assert row["perplexity"] != pytest.approx(math.exp(row["loss"]), rel=1e-9)  # per token, not per batch mean


def test_perplexity_on_a_model_that_is_not_a_language_model_is_refused(sh):
    r = sh.run("m=$(torch nn linear 4 3); L=$(torch data loader $(torch data tensors $(torch randn 8 4) "
               "$(torch zeros 8 --dtype int64)) --batch_size 4); torch fit $m $(torch optim sgd $m) $L "
               "--loss cross_entropy --metrics perplexity")
    assert r.code == protocol.exit_status("bad_argument") and "perplexity scores a language model" in r.err, r.err
