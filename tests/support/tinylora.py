"""LoRA for the `torch lm` tests: a chat JSONL file the daemon and the oracle both read, and the oracle's own
training data and peft model made in this process as a user's transformers + peft script would make them."""
import json
import os

import torch
from support import tinylm

CONVERSATIONS = [
    [{"role": "user", "content": "why is the sky blue?"}, {"role": "assistant", "content": "rayleigh scattering"}],
    [{"role": "system", "content": "be short"}, {"role": "user", "content": "hello"},
     {"role": "assistant", "content": "hello world"}],
    [{"role": "user", "content": "what is pytorch?"}, {"role": "assistant", "content": "tensors in a daemon"}],
    [{"role": "user", "content": "a loss?"}, {"role": "assistant", "content": "trained with an optimizer"}],
]


def chat_file(folder):
    path = os.path.join(folder, "chat.jsonl")
    with open(path, "w") as f:
        f.writelines(json.dumps({"messages": c}) + "\n" for c in CONVERSATIONS)
    return path


def batches(tokenizer, seq_len, batch_size):
    """[(input_ids, labels)] of CONVERSATIONS in order: the chat template, padded, labels -100 at the padding."""
    ids = torch.full((len(CONVERSATIONS), seq_len), tokenizer.pad_token_id, dtype=torch.int64)
    labels = torch.full_like(ids, -100)
    for i, c in enumerate(CONVERSATIONS):
        row = tokenizer(tokenizer.apply_chat_template(c, tokenize=False), add_special_tokens=False).input_ids[:seq_len]
        ids[i, :len(row)] = labels[i, :len(row)] = torch.tensor(row)
    return [(ids[i:i + batch_size], labels[i:i + batch_size]) for i in range(0, len(ids), batch_size)]


def peft_model(seed, r=8, alpha=16, targets=("q_proj", "v_proj"), arch="llama", name="lora1"):
    """(peft model, tokenizer): tinylm's model with a LoRA adapter peft injected after torch.manual_seed(seed)."""
    from torchsh.lm import library
    peft = library.peft()
    model, tokenizer = tinylm.oracle(arch)
    torch.manual_seed(seed)
    config = peft.LoraConfig(r=r, lora_alpha=alpha, target_modules=list(targets), lora_dropout=0.0)
    return peft.get_peft_model(model, config, adapter_name=name), tokenizer


def peft_fit(seed, epochs=1, lr=1e-2, r=8, seq_len=40, batch_size=2, autocast=None):
    """(each epoch's mean loss, the peft model) of a plain PyTorch loop, AdamW over peft_model(seed, r)'s LoRA
    weights, the forward and loss under torch.autocast("cpu", AUTOCAST) when given: what `torch fit $a $o $L
    --loss lm` computes (its epoch loss: the mean of the batch losses weighted by their lengths)."""
    import contextlib
    model, tokenizer = peft_model(seed, r=r)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    losses = []
    for _ in range(epochs):
        total, n = 0.0, 0
        for x, y in batches(tokenizer, seq_len, batch_size):
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=autocast) if autocast else contextlib.nullcontext():
                loss = model(input_ids=x, labels=y).loss
            loss.backward()
            optimizer.step()
            total, n = total + loss.item() * len(x), n + len(x)
        losses.append(total / n)
    return losses, model
