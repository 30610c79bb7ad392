"""`torch lm adapter use` and `torch lm save`: a trained adapter (lora_B no longer zero) swapped in makes greedy
generation differ from the base and equal the in-process peft model's loaded from `lm save`'s folder
(PeftModel.from_pretrained, the oracle), `none` gives the base's again, and the saved folder's logits are the
daemon adapter's."""
import json
import time

import pytest
import torch
from support import tinylm, tinylora

PROMPT = "why is the sky blue?"


def _trained(sh, tmp_path):
    """(lm handle, adapter handle, saved folder) of an adapter fit for two epochs at a high rate."""
    out = sh("m=$(torch lm open %s); a=$(torch lm lora $m --r 8 --alpha 16 --targets q_proj,v_proj)\n"
             "L=$(torch data open %s --format chat --tokenizer $m --seq_len 40 | torch data loader - --batch_size 2)\n"
             "torch fit $a $(torch optim adamw $a --lr 5e-2) $L --loss lm --epochs 2 >/dev/null\n"
             "torch lm save $a %s >/dev/null; echo $m $a"
             % (tinylm.folder("llama"), tinylora.chat_file(sh.folder), tmp_path / "out"))
    m, a = out.split()
    return m, a, str(tmp_path / "out")


def _generated(sh, m):
    rows = sh("torch lm generate %s %s --max_new_tokens 12 --temperature 0 --json" % (m, json.dumps(PROMPT)))
    return json.loads(rows.splitlines()[-1])["tokens"]


def _oracle_tokens(model, tokenizer):
    text = tokenizer.apply_chat_template([{"role": "user", "content": PROMPT}], add_generation_prompt=True, tokenize=False)
    ids = tokenizer(text, add_special_tokens=False, return_tensors="pt").input_ids
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=12, do_sample=False,
                             pad_token_id=tokenizer.pad_token_id)
    return out[0, ids.shape[1]:].tolist()


@pytest.mark.slow
def test_a_swapped_in_adapter_generates_as_peft_does_from_its_saved_folder_and_none_as_the_base(sh, tmp_path):
    from torchsh.lm import library
    m, a, folder = _trained(sh, tmp_path)
    base_tokens = _generated(sh, m)
    sh("torch lm adapter use %s %s >/dev/null" % (m, a))
    adapted = _generated(sh, m)
    sh("torch lm adapter use %s none >/dev/null" % m)
    assert _generated(sh, m) == base_tokens
    model, tokenizer = tinylm.oracle("llama")
    assert _oracle_tokens(model, tokenizer)[:len(base_tokens)] == base_tokens
    peft_model = library.peft().PeftModel.from_pretrained(model, folder).eval()
    want = _oracle_tokens(peft_model, tokenizer)
    assert adapted == want[:len(adapted)] and adapted != base_tokens


@pytest.mark.slow
def test_the_saved_folder_in_peft_gives_the_daemon_adapters_logits_in_peft_layout(sh, tmp_path):
    from torchsh.lm import library
    _, a, folder = _trained(sh, tmp_path)
    ids = [3, 89, 87, 271, 203]
    logits = sh.fetch(sh("torch forward %s $(torch tensor '[%s]' --dtype int64)" % (a, json.dumps(ids))))
    model, _ = tinylm.oracle("llama")
    peft_model = library.peft().PeftModel.from_pretrained(model, folder).eval()
    with torch.no_grad():
        assert torch.equal(peft_model(input_ids=torch.tensor([ids])).logits, logits)
    config = json.load(open(folder + "/adapter_config.json"))
    assert (config["peft_type"], config["r"], config["lora_alpha"]) == ("LORA", 8, 16)
    assert config["base_model_name_or_path"] == tinylm.folder("llama")


def test_an_adapter_swap_takes_milliseconds_and_a_name_not_the_models_is_refused(sh):
    m = sh("m=$(torch lm open %s); torch lm lora $m --name fast >/dev/null; echo $m" % tinylm.folder("llama"))
    started = time.perf_counter()
    got = json.loads(sh("torch lm adapter use %s fast" % m))
    print("adapter swap, client round trip included: %.1f ms" % ((time.perf_counter() - started) * 1e3))
    assert got["active_adapter"] == "fast" and "fast" in got["adapters"]
    r = sh.run("torch lm adapter use %s nosuch" % m)
    assert r.code != 0 and "[bad_argument]" in r.err and "fast" in r.err
    sh("torch lm adapter use %s none" % m)
