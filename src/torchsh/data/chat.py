"""`torch data open FILE.jsonl --format chat --tokenizer LM --seq_len N`: a language model's training data, items
(input_ids [N], labels [N]) int64, as `fit --loss lm` takes them.

Each line is a JSON object: {"messages": [{"role", "content"}, …]} rendered with the tokenizer's chat template
(tokenizer.apply_chat_template(messages, tokenize=False), then tokenized without adding special tokens again),
or {"text": …} tokenized as it is (tokenizer(text): its special tokens as it adds them). Each item is cut to
N tokens, then padded to N with the pad token (its eos where it has none); labels are the ids, -100 at the
padding (never counted by the loss). --train_on completions also sets -100 over everything but the
assistant's replies (each reply's text and its end-of-turn; the header that opens its turn is the prompt's):
each message's part of the rendered conversation is tokenized on its own for this, so the template must render
a conversation as its messages one after another (ChatML, Llama's, Qwen's do).

The tokenizer is the language model's (transformers' PreTrainedTokenizerFast); this room only calls it.
"""
import json

import torch

from torchsh import fileio
from torchsh.data.datasets import FileDataset, TensorField
from torchsh.errors import TorchshError, bad_argument

IGNORE_INDEX = -100
MAX_FILE_BYTES = 1 << 30  # a JSONL file read whole, at most
TRAIN_ON = ("all", "completions")


def open_chat(path, tokenizer, seq_len, train_on="all", context_length=None, budget=None):
    """A FileDataset of (input_ids, labels) over the JSONL file at PATH; context_length: the model's, which
    --seq_len may not pass; budget: the memory budget that admits the two tensors before they are made."""
    if tokenizer is None:
        raise TorchshError("missing_argument", "--format chat needs the tokenizer: --tokenizer LM",
                           "torch data open chat.jsonl --format chat --tokenizer $(torch lm open DIR) --seq_len 512")
    if seq_len is None or seq_len < 2:
        raise bad_argument("--seq_len (tokens per item, padded or cut to it) must be at least 2",
                           "--seq_len 512")
    if context_length and seq_len > context_length:
        raise bad_argument("--seq_len %d is past the model's context length of %d: positions it never learned"
                           % (seq_len, context_length), "--seq_len %d at most" % context_length)
    if train_on not in TRAIN_ON:
        raise bad_argument("--train_on %s: train on all tokens or on completions" % train_on,
                           "--train_on %s" % " or ".join(TRAIN_ON))
    rows = [encode(tokenizer, line, train_on, "%s:%d" % (path, n)) for n, line in _lines(path)]
    if not rows:
        raise bad_argument("%s holds no JSON lines" % path, '{"messages": [{"role": "user", "content": "hi"}, …]}')
    if budget is not None:  # input_ids and labels, int64
        budget.admit_bytes(2 * len(rows) * seq_len * 8, "the chat items' input_ids and labels")
    pad = pad_id(tokenizer)
    ids = torch.full((len(rows), seq_len), pad, dtype=torch.int64)
    labels = torch.full((len(rows), seq_len), IGNORE_INDEX, dtype=torch.int64)
    for i, (row_ids, row_labels) in enumerate(rows):
        n = min(len(row_ids), seq_len)
        ids[i, :n] = torch.tensor(row_ids[:n], dtype=torch.int64)
        labels[i, :n] = torch.tensor(row_labels[:n], dtype=torch.int64)
    return FileDataset([TensorField("input_ids", ids), TensorField("labels", labels)])


def _lines(path):
    size = fileio.regular_file(path).st_size
    if size > MAX_FILE_BYTES:
        raise bad_argument("%s is %d bytes: a chat file is read whole, %d at most" % (path, size, MAX_FILE_BYTES))
    try:
        with open(path, "rb") as f:
            text = f.read().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise fileio.file_error(path, "read", e) from None
    return [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]


def pad_id(tokenizer):
    for token_id in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if token_id is not None:
            return token_id
    return 0


def encode(tokenizer, line, train_on, where):
    """(ids, labels) of one JSONL line, before cutting and padding."""
    try:
        row = json.loads(line)
    except ValueError as e:
        raise bad_argument("%s is not JSON: %s" % (where, e)) from None
    if isinstance(row, dict) and isinstance(row.get("text"), str):
        ids = tokenizer(row["text"]).input_ids
        return ids, list(ids)
    messages = row.get("messages") if isinstance(row, dict) else None
    if not isinstance(messages, list) or not messages or not all(_is_message(m) for m in messages):
        raise bad_argument("%s is neither {\"messages\": [{\"role\", \"content\"}, …]} nor {\"text\": …}" % where)
    if getattr(tokenizer, "chat_template", None) is None:
        raise bad_argument("the tokenizer has no chat template, which {\"messages\": …} lines need",
                           "write the conversations as {\"text\": …} lines")
    if train_on == "all":
        ids = _tokens(tokenizer, tokenizer.apply_chat_template(messages, tokenize=False))
        return ids, list(ids)
    return _completions(tokenizer, messages, where)


def _is_message(m):
    return isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)


def _tokens(tokenizer, text):
    return tokenizer(text, add_special_tokens=False).input_ids


def _completions(tokenizer, messages, where):
    """(ids, labels) with labels only on the assistant's replies: each message's part tokenized on its own."""
    ids, labels, before = [], [], ""
    for i, message in enumerate(messages):
        whole = tokenizer.apply_chat_template(messages[:i + 1], tokenize=False)
        opened = tokenizer.apply_chat_template(messages[:i], tokenize=False, add_generation_prompt=True) \
            if message["role"] == "assistant" else whole
        if not (whole.startswith(before) and whole.startswith(opened) and opened.startswith(before)):
            raise bad_argument("%s: the chat template does not render the conversation message after message, "
                               "which --train_on completions needs" % where, "--train_on all")
        prompt, reply = _tokens(tokenizer, opened[len(before):]), _tokens(tokenizer, whole[len(opened):])
        ids += prompt + reply
        trained = message["role"] == "assistant"
        labels += [IGNORE_INDEX] * len(prompt) + (list(reply) if trained else [IGNORE_INDEX] * len(reply))
        before = whole
    return ids, labels
