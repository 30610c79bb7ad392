"""data/chat.py streams: opening a JSONL file indexes its lines (each checked, none tokenized but the first), an
item is tokenized when it is read, the items come in pieces of 1024 lines, and a file cut short since is refused."""
import json

import pytest
from support import tinylm

from torchsh.data import chat
from torchsh.errors import TorchshError


class CountingTokenizer:
    """The tiny tokenizer, counting the texts it tokenizes."""

    def __init__(self, tok):
        self.tok, self.texts = tok, 0

    def __call__(self, text, **kw):
        self.texts += 1
        return self.tok(text, **kw)

    def __getattr__(self, name):
        return getattr(self.tok, name)


def test_a_file_of_many_lines_opens_without_tokenizing_them_and_reads_an_item_when_asked(tmp_path):
    _, tok = tinylm.oracle("llama")
    path = tmp_path / "many.jsonl"
    path.write_text("".join(json.dumps({"text": "hello world %d" % i}) + "\n" for i in range(3000)))
    counting = CountingTokenizer(tok)
    d = chat.open_chat(str(path), counting, 16)
    assert len(d) == 3000 and counting.texts <= 1  # item 0, tokenized at open as a check
    ids, labels = d[2500]
    want = tok("hello world 2500").input_ids
    assert ids[:len(want)].tolist() == want and (labels[len(want):] == -100).all()
    assert counting.texts <= 3  # the two fields of one item share one tokenizing
    assert d.fields[0].piece_starts.tolist() == [0, 1024, 2048]


def test_a_file_cut_short_after_it_was_opened_is_refused_by_name(tmp_path):
    _, tok = tinylm.oracle("llama")
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"text": "hello world"}) + "\n" for _ in range(10)))
    d = chat.open_chat(str(path), tok, 8)
    path.write_text(json.dumps({"text": "hi"}) + "\n")
    with pytest.raises(TorchshError) as e:
        d[5]
    assert e.value.code == "file_error" and "c.jsonl was cut short" in e.value.message
