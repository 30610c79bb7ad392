"""Serving and training share one copy of the base weights: an lm served with --openai while an adapter of it is
made and fit. The lm's bytes stay the same throughout, the adapter's nn:// bytes are its LoRA weights only (r x
(in + out) per adapted layer, from the in-process model's shapes), the daemon's distinct storages grow by those
alone and not at all while it fits; requests answered while the fit runs are the base's; after `lm adapter use $m $a`
the served greedy answer is `torch lm generate`'s and peft's from the saved adapter (the in-process oracle), and
after `use none` the base's again."""
import json

import pytest
import torch
from support import tinylm, tinylora
from support.apicall import UnixHTTPConnection

PROMPT, R, TOKENS = "why is the sky blue?", 8, 12


def served(conn):
    conn.request("POST", "/v1/chat/completions", body=json.dumps(
        {"model": "shared", "max_completion_tokens": TOKENS, "temperature": 0,
         "messages": [{"role": "user", "content": PROMPT}]}), headers={"Content-Type": "application/json"})
    reply = conn.getresponse()
    body = json.loads(reply.read())
    assert reply.status == 200, body
    return body["choices"][0]["message"]["content"]


def generated(sh, m):
    return json.loads(sh("torch lm generate %s %s --max_new_tokens %d --temperature 0 --json"
                         % (m, json.dumps(PROMPT), TOKENS)).splitlines()[-1])["text"]


def rows(sh):
    return {r["handle"]: r for r in json.loads(sh("torch tensors --json"))}


def held(sh):
    return json.loads(sh("torch daemon status --json"))["bytes_held"]


def job_state(sh, job):
    return next(r["state"] for r in json.loads(sh("torch job list --json")) if r["handle"] == job)


def oracle_text(folder):
    """peft's greedy chat answer in this process from the saved adapter (None: the base alone)."""
    from torchsh.lm import library
    model, tokenizer = tinylm.oracle("llama")
    if folder is not None:
        model = library.peft().PeftModel.from_pretrained(model, folder).eval()
    text = tokenizer.apply_chat_template([{"role": "user", "content": PROMPT}], add_generation_prompt=True, tokenize=False)
    ids = tokenizer(text, add_special_tokens=False, return_tensors="pt").input_ids
    with torch.no_grad():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=TOKENS, do_sample=False,
                             pad_token_id=tokenizer.pad_token_id)
    return tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True)


def lora_bytes():
    """4 bytes x r x (in + out) of every q_proj and v_proj of the model, read in this process."""
    model, _ = tinylm.oracle("llama")
    return sum(4 * R * sum(m.weight.shape) for name, m in model.named_modules() if name.endswith(("q_proj", "v_proj")))


@pytest.mark.slow
def test_serving_and_training_one_adapter_share_one_copy_of_the_base_weights(sh, tmp_path):
    m = sh("torch lm open %s" % tinylm.folder("llama"))
    job = sh("torch serve %s --openai --name shared --detach" % m)
    conn = UnixHTTPConnection(sh.socket)
    base_answer, lm_bytes, before = served(conn), rows(sh)[m]["bytes"], held(sh)
    assert base_answer == generated(sh, m) == oracle_text(None)
    a = sh("torch lm lora %s --r %d --alpha 16 --targets q_proj,v_proj" % (m, R))
    assert rows(sh)[a]["bytes"] == lora_bytes() and held(sh) - before == lora_bytes()
    o, L = sh("echo $(torch optim adamw %s --lr 5e-2) $(torch data open %s --format chat --tokenizer %s --seq_len 40 "
              "| torch data loader - --batch_size 2)" % (a, tinylora.chat_file(sh.folder), m)).split()
    before_fit = held(sh)
    fit = sh("torch fit %s %s %s --loss lm --epochs 100000 --detach" % (a, o, L))
    during = []
    for _ in range(3):  # answered between the fit's steps: the base's (the training adapter is active in its forward only)
        during.append(served(conn))
        assert job_state(sh, fit) == "running"
    sh("torch job stop %s >/dev/null; torch fit %s %s %s --loss lm --epochs 2 >/dev/null" % (fit, a, o, L))
    assert during == [base_answer] * 3
    after = rows(sh)
    assert after[m]["bytes"] == lm_bytes and after[a]["bytes"] == lora_bytes()
    assert held(sh) == before_fit  # the storages behind every handle: the fit and the serving copied none
    sh("torch lm save %s %s >/dev/null; torch lm adapter use %s %s >/dev/null" % (a, tmp_path / "a", m, a))
    adapted = served(conn)
    assert adapted == generated(sh, m) == oracle_text(str(tmp_path / "a")) and adapted != base_answer
    sh("torch lm adapter use %s none >/dev/null" % m)
    assert served(conn) == generated(sh, m) == base_answer
    sh("torch job stop %s >/dev/null" % job)
