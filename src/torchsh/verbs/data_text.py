"""`torch data tokenize`: text for language models, tokenized piece by piece into a memory-mapped token file
(data/tokenize.py), as (input_ids, labels) items `fit --loss lm` trains on."""
from torchsh.data import textsources
from torchsh.data import tokenize as tokenizing
from torchsh.errors import TorchshError, bad_argument
from torchsh.history import datasets as history_data
from torchsh.verbs import verb

_FLAGS = "*, str column=\"text\", LanguageModel? tokenizer=None, int? seq_len=None, bool pack=False) -> Dataset"
EXAMPLE = ("python -m torchsh.lm.tiny tiny >/dev/null && printf '%s\\n' '{\"text\": \"the sky is blue\"}' "
           "'{\"text\": \"hello world\"}' > docs.jsonl && "
           "torch data info $(torch data tokenize docs.jsonl --tokenizer $(torch lm open tiny) --seq_len 4 --pack)")


@verb("data.tokenize(Dataset dataset, " + _FLAGS, "data.tokenize(Path[] files, " + _FLAGS,
      category="files", form=history_data.opened, no_form=history_data.NOT_HELD, examples=(EXAMPLE,),
      read_only=True)
def tokenize(ctx, dataset=None, files=None, column="text", tokenizer=None, seq_len=None, pack=False):
    """Text for a language model: one text column tokenized into (input_ids, labels) items of --seq_len tokens.

    The documents are the column's values (--column, default text) in a .jsonl file (each line a JSON
    object), a .parquet or .arrow/.feather/.ipc file, or the text field of a dataset's items; several files
    are read one after another. They are tokenized a piece at a time into a token file (int32, memory-mapped,
    in the daemon's private folder, removed when the dataset is freed), never held whole.
    --pack: each document's tokens (no special tokens) then the tokenizer's eos, all one stream cut into
    windows of --seq_len (GPT-2's packing): input_ids and labels are the window (`fit --loss lm` shifts
    them); the last partial window is dropped (`data info` counts it). Without --pack each document is one
    item, tokenized as `data open --format chat` tokenizes a {"text"} line, cut or padded to --seq_len
    (labels -100 at the padding).

    Args:
        dataset: a dataset whose items hold text in the field --column names
        files: .jsonl .parquet .arrow .feather .ipc files, read in the order given
        column: the key (jsonl), column (parquet, arrow) or field (a dataset) holding the documents
        tokenizer: the language model (lm://) whose tokenizer is used
        seq_len: tokens per item
        pack: pack the documents into windows of --seq_len, joined by eos (else one document an item)
    """
    if tokenizer is None:
        raise TorchshError("missing_argument", "data tokenize needs the tokenizer: --tokenizer LM",
                           "torch data tokenize docs.jsonl --tokenizer $(torch lm open DIR) --seq_len 512 --pack")
    if seq_len is None:
        raise TorchshError("missing_argument", "data tokenize needs --seq_len (tokens per item)", "--seq_len 512")
    if dataset is None and not files:
        raise bad_argument("data tokenize takes a dataset or files", "torch data tokenize docs.jsonl --column text …")
    pieces = textsources.dataset_texts(dataset, column) if dataset is not None else _files_texts(files, column)
    return tokenizing.tokenize(pieces, tokenizer.tokenizer, seq_len, pack, tokenizer.context_length())


def _files_texts(files, column):
    for path in files:
        yield from textsources.file_texts(path, column)
