"""data/chat.py with the tiny models' tokenizer: a conversation rendered by the chat template and tokenized as
apply_chat_template(tokenize=True) does, padded with labels -100 there; --train_on completions keeps labels
only on the assistant's replies; text lines are the tokenizer's own ids; malformed lines are refused by line."""
import json

import pytest
import torch
from support import tinylm

from torchsh.data import chat
from torchsh.errors import TorchshError

CONVERSATION = [{"role": "user", "content": "why is the sky blue?"}, {"role": "assistant", "content": "rayleigh scattering"}]


def _file(tmp_path, *rows):
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_a_conversation_is_the_chat_templates_tokens_padded_with_labels_ignored_at_the_padding(tmp_path):
    _, tok = tinylm.oracle("llama")
    d = chat.open_chat(_file(tmp_path, {"messages": CONVERSATION}, {"text": "hello world"}), tok, 40)
    ids, labels = d[0]
    want = tok.apply_chat_template(CONVERSATION, tokenize=True, return_dict=False)
    want = want["input_ids"] if isinstance(want, dict) else want
    n = len(want)
    assert ids[:n].tolist() == want and torch.equal(labels[:n], ids[:n])
    assert (ids[n:] == tok.pad_token_id).all() and (labels[n:] == -100).all()
    assert d[1][0][:len(tok("hello world").input_ids)].tolist() == tok("hello world").input_ids


def test_train_on_completions_keeps_labels_only_on_the_assistants_reply(tmp_path):
    _, tok = tinylm.oracle("llama")
    ids, labels = chat.open_chat(_file(tmp_path, {"messages": CONVERSATION}), tok, 40, "completions")[0]
    trained = ids[labels != -100].tolist()
    assert tok.decode(trained) == "rayleigh scattering<|im_end|>\n"
    assert (labels[labels != -100] == ids[labels != -100]).all()


def test_a_line_that_is_no_conversation_is_refused_naming_it(tmp_path):
    _, tok = tinylm.oracle("llama")
    with pytest.raises(TorchshError) as e:
        chat.open_chat(_file(tmp_path, {"messages": CONVERSATION}, {"turns": []}), tok, 16)
    assert e.value.code == "bad_argument" and "c.jsonl:2" in e.value.message


def test_a_seq_len_past_the_models_context_is_refused(tmp_path):
    _, tok = tinylm.oracle("llama")
    with pytest.raises(TorchshError) as e:
        chat.open_chat(_file(tmp_path, {"messages": CONVERSATION}), tok, 257, context_length=256)
    assert e.value.code == "bad_argument" and "context length of 256" in e.value.message
    assert len(chat.open_chat(_file(tmp_path, {"messages": CONVERSATION}), tok, 256, context_length=256)) == 1


def test_the_items_tensors_are_admitted_by_the_budget_before_they_are_made(tmp_path):
    from torchsh.memory.budget import Budget, rss_bytes
    _, tok = tinylm.oracle("llama")
    path = _file(tmp_path, {"messages": CONVERSATION}, {"text": "hello world"})
    with pytest.raises(TorchshError) as e:  # 2 rows x 10^9 tokens x (ids + labels): 32 GB, never allocated
        chat.open_chat(path, tok, 10 ** 9, budget=Budget(rss_bytes() + (1 << 30), "a test's"))
    assert e.value.code == "out_of_memory" and "input_ids and labels" in e.value.message
    assert len(chat.open_chat(path, tok, 64, budget=Budget(rss_bytes() + (1 << 30), "a test's"))) == 2
