"""data/tokenize.py with the tiny models' tokenizer: --pack's token stream is the tokenizer's own ids of the
documents joined by eos, cut into windows as a plain-Python packing cuts it (the partial window dropped and
counted); without --pack each document is one item, cut or padded as data/chat.py does; the documents are
tokenized a piece at a time into the token file (never held whole), which goes with the dataset."""
import gc
import json
import os

import pytest
import torch
from support import tinylm

from torchsh.data import scratchfiles, textsources
from torchsh.data import tokenize as tokenizing
from torchsh.errors import TorchshError

DOCS = ["the sky is blue because air scatters blue light", "hello world", "why is the sky blue?",
        "a model is trained with a loss", "pytorch tensors live in a daemon"] * 5


def _jsonl(tmp_path, docs, key="text"):
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({key: d, "id": i}) + "\n" for i, d in enumerate(docs)))
    return str(path)


def _reference_windows(tokens, n):
    """GPT-2's packing in plain Python: consecutive windows of n, the partial last one dropped."""
    return [tokens[i:i + n] for i in range(0, len(tokens) - n + 1, n)]


def test_packed_windows_are_the_tokenizers_ids_of_the_documents_joined_by_eos(tmp_path):
    _, tok = tinylm.oracle("llama")
    d = tokenizing.tokenize(textsources.file_texts(_jsonl(tmp_path, DOCS), "text"), tok, 16, pack=True)
    stream = tok("".join(doc + tok.eos_token for doc in DOCS), add_special_tokens=False).input_ids
    want = _reference_windows(stream, 16)
    assert len(d) == len(want) and [d[i][0].tolist() for i in range(len(d))] == want
    assert all(torch.equal(d[i][0], d[i][1]) and d[i][0].dtype == torch.int64 for i in range(len(d)))
    assert d.token_counts == {"tokens": len(stream), "documents": len(DOCS), "seq_len": 16, "packed": True,
                              "dropped": len(stream) - 16 * len(want)}
    batch = d.__getitems__([3, 0, 2])
    assert [x.tolist() for x, _ in batch] == [want[3], want[0], want[2]]
    assert d.fields[0].piece_starts.tolist() == list(range(0, len(d), tokenizing.WINDOWS_PER_PIECE))


def test_without_pack_each_document_is_one_item_cut_or_padded_as_chat_pads_it(tmp_path):
    _, tok = tinylm.oracle("llama")
    d = tokenizing.tokenize(textsources.file_texts(_jsonl(tmp_path, DOCS), "text"), tok, 6)
    assert len(d) == len(DOCS)
    for i, doc in enumerate(DOCS):
        ids, labels = d[i]
        want = tok(doc).input_ids[:6]
        pad = [tok.pad_token_id] * (6 - len(want))
        assert ids.tolist() == want + pad and labels.tolist() == want + [-100] * len(pad)
    assert d.token_counts["cut"] == sum(max(0, len(tok(doc).input_ids) - 6) for doc in DOCS)


def test_the_documents_are_tokenized_a_piece_at_a_time_into_the_file(tmp_path, monkeypatch):
    _, tok = tinylm.oracle("llama")
    monkeypatch.setattr(textsources, "PIECE_ROWS", 4)
    seen = []  # (documents in the call, token bytes already in the file being written)

    class Counting:
        eos_token_id, pad_token_id = tok.eos_token_id, tok.pad_token_id

        def __call__(self, texts, **kw):
            written = sum(e.stat().st_size for e in os.scandir(scratchfiles.folder()) if e.name.startswith(".torchsh-"))
            seen.append((len(texts), written))
            return tok(texts, **kw)

    d = tokenizing.tokenize(textsources.file_texts(_jsonl(tmp_path, DOCS), "text"), Counting(), 8, pack=True)
    assert max(n for n, _ in seen) == 4 and len(seen) == -(-len(DOCS) // 4)
    assert all(b > a for (_, a), (_, b) in zip(seen, seen[1:]))  # each piece went to the file before the next
    stream = tok("".join(doc + tok.eos_token for doc in DOCS), add_special_tokens=False).input_ids
    assert [d[i][0].tolist() for i in range(len(d))] == _reference_windows(stream, 8)


def test_the_token_file_is_removed_when_the_dataset_is_freed(tmp_path):
    _, tok = tinylm.oracle("llama")
    d = tokenizing.tokenize([DOCS], tok, 8, pack=True)
    path = d.fields[0].tokens.path
    assert os.path.isfile(path) and os.path.dirname(path) == scratchfiles.folder()
    assert os.stat(scratchfiles.folder()).st_mode & 0o777 == 0o700
    del d
    gc.collect()
    assert not os.path.exists(path)


def test_a_parquet_text_column_gives_the_tokens_the_same_documents_give_in_jsonl(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa
    _, tok = tinylm.oracle("llama")
    pq.write_table(pa.table({"text": DOCS, "n": list(range(len(DOCS)))}), tmp_path / "d.parquet", row_group_size=7)
    a = tokenizing.tokenize(textsources.file_texts(str(tmp_path / "d.parquet"), "text"), tok, 8, pack=True)
    b = tokenizing.tokenize(textsources.file_texts(_jsonl(tmp_path, DOCS), "text"), tok, 8, pack=True)
    assert len(a) == len(b) and all(torch.equal(a[i][0], b[i][0]) for i in range(len(a)))
    with pytest.raises(TorchshError) as e:
        list(textsources.file_texts(str(tmp_path / "d.parquet"), "n"))
    assert e.value.code == "bad_argument" and "row 1, column 'n' holds int" in e.value.message


def test_an_arrow_stream_file_gives_the_tokens_the_same_documents_give_in_jsonl(tmp_path):
    pa = pytest.importorskip("pyarrow")
    _, tok = tinylm.oracle("llama")
    table = pa.table({"text": DOCS})
    with pa.ipc.new_stream(str(tmp_path / "d.arrow"), table.schema) as writer:
        writer.write_table(table, max_chunksize=5)  # several record batches: the pieces read one after another
    a = tokenizing.tokenize(textsources.file_texts(str(tmp_path / "d.arrow"), "text"), tok, 8, pack=True)
    b = tokenizing.tokenize(textsources.file_texts(_jsonl(tmp_path, DOCS), "text"), tok, 8, pack=True)
    assert len(a) == len(b) and all(torch.equal(a[i][0], b[i][0]) for i in range(len(a)))


def test_a_line_without_the_column_is_refused_by_its_line(tmp_path):
    _, tok = tinylm.oracle("llama")
    path = tmp_path / "docs.jsonl"
    path.write_text('{"text": "hello"}\n\n{"body": "world"}\n')
    with pytest.raises(TorchshError) as e:
        tokenizing.tokenize(textsources.file_texts(str(path), "text"), tok, 8, pack=True)
    assert e.value.code == "bad_argument" and "docs.jsonl:3 has no text under 'text'" in e.value.message
    assert not [n for n in os.listdir(scratchfiles.folder()) if n.startswith(".torchsh-")]  # nothing left behind


def test_a_dataset_whose_items_hold_text_is_read_by_its_field():
    _, tok = tinylm.oracle("llama")

    class Texts(torch.utils.data.Dataset):
        field_names = ["id", "text"]

        def __len__(self):
            return len(DOCS)

        def __getitem__(self, i):
            return torch.tensor(i), DOCS[i]

    d = tokenizing.tokenize(textsources.dataset_texts(Texts(), "text"), tok, 8)
    assert [d[i][0].tolist() for i in range(3)] == [(tok(x).input_ids + [tok.pad_token_id] * 8)[:8] for x in DOCS[:3]]
