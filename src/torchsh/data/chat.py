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

The file streams (ChatLines): opening it indexes its lines in one pass that checks each (JSON, a conversation or
a text; a bad line is refused by its number at open, so a fit never meets it mid-epoch) without tokenizing them;
an item is tokenized when it is read, and the items come in pieces of LINES_PER_PIECE lines for the loader.

The tokenizer is the language model's (transformers' PreTrainedTokenizerFast); this room only calls it.
"""
import array
import json
import os

import torch

from torchsh import fileio
from torchsh.data.datasets import FileDataset
from torchsh.errors import TorchshError, bad_argument

IGNORE_INDEX = -100
LINES_PER_PIECE = 1024  # a piece: lines the loader's shuffle reads together
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
    lines = ChatLines(path, tokenizer, seq_len, train_on)
    if not len(lines):
        raise bad_argument("%s holds no JSON lines" % path, '{"messages": [{"role": "user", "content": "hi"}, …]}')
    if budget is not None:  # what one item makes: input_ids and labels, int64
        budget.admit_bytes(2 * seq_len * 8, "one chat item's input_ids and labels")
    dataset = FileDataset([ChatColumn("input_ids", lines, 0), ChatColumn("labels", lines, 1)])
    dataset[0]  # a template that cannot serve --train_on completions is refused at open, not mid-epoch
    return dataset


class ChatLines:
    """The JSONL file's line index (each JSON line's byte offset and line number, int64), made in one pass
    that checks every line (JSON, and a conversation or a text) without tokenizing it; encoded(indices)
    reads and tokenizes those lines when they are asked for. The two fields (input_ids, labels) ask in turn
    for the same indices, so the last answer is kept for the second."""

    def __init__(self, path, tokenizer, seq_len, train_on):
        self.path, self.tokenizer, self.seq_len, self.train_on = path, tokenizer, seq_len, train_on
        self.size = fileio.regular_file(path).st_size
        starts, numbers = array.array("q"), array.array("q")
        try:
            with open(path, "rb") as f:
                at = 0
                for n, line in enumerate(f, 1):
                    if line.strip():
                        checked_row(tokenizer, line, "%s:%d" % (path, n))
                        starts.append(at)
                        numbers.append(n)
                    at += len(line)
        except OSError as e:
            raise fileio.file_error(path, "read", e) from None
        self.starts, self.numbers = torch.tensor(starts, dtype=torch.int64), torch.tensor(numbers, dtype=torch.int64)
        self._last = (None, None)

    def __len__(self):
        return len(self.starts)

    def encoded(self, indices):
        """(input_ids [k, N], labels [k, N]) of the lines at INDICES: cut to N, padded (labels -100 there)."""
        key = tuple(indices)
        last = self._last
        if last[0] == key:
            return last[1]
        pad = pad_id(self.tokenizer)
        ids = torch.full((len(key), self.seq_len), pad, dtype=torch.int64)
        labels = torch.full((len(key), self.seq_len), IGNORE_INDEX, dtype=torch.int64)
        for k, (line, where) in enumerate(self._read(key)):
            row_ids, row_labels = encode(self.tokenizer, line, self.train_on, where)
            n = min(len(row_ids), self.seq_len)
            ids[k, :n] = torch.tensor(row_ids[:n], dtype=torch.int64)
            labels[k, :n] = torch.tensor(row_labels[:n], dtype=torch.int64)
        self._last = (key, (ids, labels))
        return ids, labels

    def _read(self, indices):
        """[(the line's bytes, path:line)] of the lines at INDICES; a file cut short since its index is file_error."""
        try:
            with open(self.path, "rb") as f:
                if os.fstat(f.fileno()).st_size < self.size:
                    raise TorchshError("file_error", "%s was cut short since it was opened" % self.path,
                                       "open it again: torch data open … --format chat")
                out = []
                for i in indices:
                    f.seek(int(self.starts[i]))
                    out.append((f.readline(), "%s:%d" % (self.path, int(self.numbers[i]))))
                return out
        except OSError as e:
            raise fileio.file_error(self.path, "read", e) from None

    def __getstate__(self):
        return dict(self.__dict__, _last=(None, None))


class ChatColumn:
    """input_ids (K 0) or labels (K 1) of the chat items, tokenized when read; pieces of LINES_PER_PIECE lines.
    It keeps no pieces (ChatLines keeps the last batch only): no piece_cache for pieces.reserve to grow."""

    mapped_bytes = 0

    def __init__(self, name, lines, k):
        self.name, self.lines, self.k = name, lines, k
        self.piece_starts = torch.arange(0, max(len(lines), 1), LINES_PER_PIECE, dtype=torch.int64)

    def __len__(self):
        return len(self.lines)

    def item(self, i):
        return self.lines.encoded((i,))[self.k][0].clone()

    def items(self, indices):
        return self.rows(torch.as_tensor(indices, dtype=torch.int64)).unbind(0)

    def rows(self, index):
        indices = range(len(self))[index] if isinstance(index, slice) else index.tolist()
        return self.lines.encoded(indices)[self.k].clone()

    def held_tensors(self):
        return [self.lines.starts, self.lines.numbers] if self.k == 0 else []


def pad_id(tokenizer):
    for token_id in (tokenizer.pad_token_id, tokenizer.eos_token_id):
        if token_id is not None:
            return token_id
    return 0


def encode(tokenizer, line, train_on, where):
    """(ids, labels) of one JSONL line, before cutting and padding."""
    row = checked_row(tokenizer, line, where)
    if "messages" not in row:
        ids = tokenizer(row["text"]).input_ids
        return ids, list(ids)
    if train_on == "all":
        ids = _tokens(tokenizer, tokenizer.apply_chat_template(row["messages"], tokenize=False))
        return ids, list(ids)
    return _completions(tokenizer, row["messages"], where)


def checked_row(tokenizer, line, where):
    """One JSONL line as {"text": str} or {"messages": [...]}, refused naming WHERE when it is neither."""
    try:
        row = json.loads(line)
    except ValueError as e:  # UnicodeDecodeError is one
        raise bad_argument("%s is not JSON: %s" % (where, e)) from None
    if isinstance(row, dict) and isinstance(row.get("text"), str):
        return {"text": row["text"]}
    messages = row.get("messages") if isinstance(row, dict) else None
    if not isinstance(messages, list) or not messages or not all(_is_message(m) for m in messages):
        raise bad_argument("%s is neither {\"messages\": [{\"role\", \"content\"}, …]} nor {\"text\": …}" % where)
    if getattr(tokenizer, "chat_template", None) is None:
        raise bad_argument("the tokenizer has no chat template, which {\"messages\": …} lines need",
                           "write the conversations as {\"text\": …} lines")
    return {"messages": messages}


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
