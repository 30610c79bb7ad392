"""`torch data tokenize SOURCE --column text --tokenizer LM --seq_len N [--pack]`: text as a language model's
(input_ids, labels) items, as `fit --loss lm` takes them.

The documents (textsources.py: a .jsonl, .parquet or .arrow file's column, or a dataset's text field) are
tokenized a piece at a time (the tokenizer's batch call on PIECE_ROWS documents) and appended to a token file
(tokenfile.py: int32 .npy, fsync'd, in the daemon's private folder, scratchfiles.py), which the items read
memory-mapped; it is removed when the dataset is freed. Nothing holds the token stream whole.

--pack (GPT-2's and nanoGPT's packing): each document is tokenized without special tokens and followed by the
tokenizer's eos, the documents one stream; item i is the window tokens[i*N:(i+1)*N] as input_ids and as labels
(the loss shifts them); the last partial window is dropped, and `data info` says how many tokens that was.
Without --pack each document is one item, tokenized as data/chat.py tokenizes a {"text": …} line (tokenizer(text):
its special tokens as it adds them), cut to N and padded to N (labels -100 at the padding).
"""
import torch

from torchsh.data import scratchfiles, tokenfile
from torchsh.data.chat import pad_id
from torchsh.data.datasets import FileDataset
from torchsh.errors import bad_argument

WINDOWS_PER_PIECE = 64    # packed windows a piece (the loader's shuffle reads a piece together)
DOCUMENTS_PER_PIECE = 1024


class TokenDataset(FileDataset):
    """(input_ids, labels) items over a token file; `token_counts` is what `data info` shows of it."""

    def __init__(self, fields, token_counts):
        super().__init__(fields)
        self.token_counts = token_counts


def tokenize(pieces, tokenizer, seq_len, pack=False, context_length=None):
    """A TokenDataset of the documents in PIECES (an iterable of lists of str, one piece at a time)."""
    _check(tokenizer, seq_len, context_length)
    if pack and tokenizer.eos_token_id is None:
        raise bad_argument("--pack joins the documents with the tokenizer's end-of-sequence token, and it has none",
                           "tokenize without --pack: one document an item")
    path = scratchfiles.new_path(".npy")
    documents, ends = [0], []

    def token_pieces():
        for texts in pieces:
            encoded = _encode(tokenizer, texts, pack)
            documents[0] += len(encoded)
            if not pack:
                ends.append(torch.tensor([len(ids) for ids in encoded], dtype=torch.int64))
            yield [token for ids in encoded for token in ids]

    count = tokenfile.write(path, token_pieces())
    try:
        dataset = _dataset(path, count, documents[0], ends, seq_len, pack, pad_id(tokenizer))
    except BaseException:
        scratchfiles.remove(path)
        raise
    scratchfiles.remove_when_freed(dataset, path)
    return dataset


def _check(tokenizer, seq_len, context_length):
    if seq_len is None or seq_len < 2:
        raise bad_argument("--seq_len (tokens per item) must be at least 2", "--seq_len 512")
    if context_length and seq_len > context_length:
        raise bad_argument("--seq_len %d is past the model's context length of %d: positions it never learned"
                           % (seq_len, context_length), "--seq_len %d at most" % context_length)


def _encode(tokenizer, texts, pack):
    """Each text's ids: with --pack without special tokens and followed by eos, else as tokenizer(text) gives."""
    if not texts:
        return []
    if not pack:
        return tokenizer(texts).input_ids
    eos = tokenizer.eos_token_id
    return [ids + [eos] for ids in tokenizer(texts, add_special_tokens=False).input_ids]


def _dataset(path, count, documents, ends, seq_len, pack, pad):
    counts = {"tokens": count, "documents": documents, "seq_len": seq_len, "packed": pack}
    if pack:
        fields = [tokenfile.TokenWindows(name, path, seq_len, WINDOWS_PER_PIECE) for name in ("input_ids", "labels")]
        counts["dropped"] = count - len(fields[0]) * seq_len
        if not len(fields[0]):
            raise bad_argument("the documents hold %d tokens with their eos: not one window of --seq_len %d"
                               % (count, seq_len), "a smaller --seq_len, or more text")
    else:
        if not documents:
            raise bad_argument("there are no documents to tokenize")
        ends = torch.cumsum(torch.cat(ends), 0)
        counts["cut"] = int((ends.diff(prepend=torch.zeros(1, dtype=torch.int64)) - seq_len).clamp(min=0).sum())
        fields = [tokenfile.DocumentRows("input_ids", path, ends, seq_len, pad, DOCUMENTS_PER_PIECE),
                  tokenfile.DocumentRows("labels", path, ends, seq_len, tokenfile.IGNORE_INDEX, DOCUMENTS_PER_PIECE)]
    return TokenDataset(fields, counts)
