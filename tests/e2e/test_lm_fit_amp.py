"""`torch fit $a $o $L --loss lm --autocast bf16` of a LoRA adapter: fit's AMP recipe (the forward and the loss under
torch.autocast, the backward and the step outside) gives the epoch losses and LoRA weights of a peft + plain PyTorch
loop under torch.autocast("cpu", dtype=torch.bfloat16) bit for bit, and they differ from float32's."""
import json

import pytest
import torch
from safetensors.torch import load_file
from support import tinylm, tinylora

SEQ, BATCH, SEED = 40, 2, 11


def daemon_fit(sh, autocast, out):
    rows = sh("m=$(torch lm open %s); torch manual_seed %d; a=$(torch lm lora $m --r 8 --alpha 16 --targets q_proj,v_proj)\n"
              "L=$(torch data open %s --format chat --tokenizer $m --seq_len %d | torch data loader - --batch_size %d)\n"
              "torch fit $a $(torch optim adamw $a --lr 1e-2) $L --loss lm --epochs 2 --json %s; torch lm save $a %s "
              ">/dev/null" % (tinylm.folder("llama"), SEED, tinylora.chat_file(sh.folder), SEQ, BATCH, autocast, out))
    return [json.loads(r)["loss"] for r in rows.splitlines()], load_file(str(out / "adapter_model.safetensors"))


def oracle_fit():
    from torchsh.lm import library
    losses, model = tinylora.peft_fit(SEED, epochs=2, seq_len=SEQ, batch_size=BATCH, autocast=torch.bfloat16)
    return losses, library.peft().get_peft_model_state_dict(model, adapter_name="lora1")


@pytest.mark.slow
def test_a_bf16_autocast_lora_fit_equals_a_peft_loop_under_torch_autocast_bit_for_bit(sh, tmp_path):
    losses, weights = daemon_fit(sh, "--autocast bf16", tmp_path / "bf16")
    want_losses, want_weights = oracle_fit()
    assert losses == want_losses
    assert sorted(weights) == sorted(want_weights) and all(torch.equal(weights[k], v) for k, v in want_weights.items())
    float32_losses, _ = daemon_fit(sh, "", tmp_path / "fp32")
    assert float32_losses != losses  # autocast did change the arithmetic: the test can tell
