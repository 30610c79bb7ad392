"""Datasets from the shell: `torch data open FILE…` -> data://…, `data info`, `data head`, `data split`,
`data transform`. The datasets are torch.utils.data.Dataset objects (src/torchsh/data/), so
`torch data loader` (PyTorch's DataLoader) takes them as they are; items are tuples of tensors.
"""
import json

import torch
import torch.utils.data

from torchsh.data import chat, openers, pieces, streaminfo, transforms
from torchsh.data.datasets import describe, known
from torchsh.data.standardize import learn as learn_statistics
from torchsh.errors import TorchshError, bad_argument
from torchsh.history import datasets as history_data
from torchsh.text import tensortext
from torchsh.text.jsonout import dumps
from torchsh.verbs import verb


CHAT_EXAMPLE = ("python -m torchsh.lm.tiny tiny >/dev/null && printf '%s\\n' '{\"messages\": [{\"role\": \"user\", "
                "\"content\": \"hi\"}, {\"role\": \"assistant\", \"content\": \"hello world\"}]}' > chat.jsonl && "
                "torch data info $(torch data open chat.jsonl --format chat --tokenizer $(torch lm open tiny) --seq_len 32)")


@verb("data.open(Path[] files, *, str? columns=None, str? target=None, ScalarType? dtype=None, "
      "ScalarType? target_dtype=None, bool? header=None, bool no_header=False, str? delimiter=None, "
      "str? onehot=None, bool stream=False, str? format=None, LanguageModel? tokenizer=None, int? seq_len=None, "
      "str? train_on=None) "
      "-> Dataset",
      category="files", repeatable=("columns", "onehot"),
      form=history_data.opened, no_form=history_data.NOT_HELD,
      examples=("printf 'x1,x2,y\\n1,2,0\\n3,4,1\\n' > t.csv && torch data info $(torch data open t.csv --target y)",
                CHAT_EXAMPLE), read_only=True)
def open_(ctx, files, columns=None, target=None, dtype=None, target_dtype=None, header=None, no_header=False,
          delimiter=None, onehot=None, stream=False, format=None, tokenizer=None, seq_len=None, train_on=None):
    """A map-style dataset over files: .npy (memory-mapped), .npz, .safetensors (lazy), .csv, .parquet (--stream:
    a set read by row group), .arrow/.feather/.ipc and `datasets` save_to_disk folders (memory-mapped, read by
    record batch), or an image folder (one sub-folder per class); items are tuples of tensors, one field per
    file. Quoted globs and braces ('shards/*.parquet', 'x-{000..127}.arrow') expand as bash expands them.

    Several files are fields side by side (`x.npy y.npy` -> items (x[i], y[i])); their lengths must agree.
    --columns picks columns (csv, parquet: each --columns one field) or arrays (npz, safetensors);
    --target COL puts that column last (alone: every other column is a feature). A table reads as
    pandas reads one: csv as `torch load` (--header, --no-header, --delimiter); features float32 (or
    --dtype), each item [k] even for one column (df[['x']]); the target one value per item (df['y']),
    int64 when every cell is an integer, class indices when its cells are names (classes sorted, shown by
    `data info`), else float32 (or --dtype); --target_dtype overrides. A text feature is refused unless
    --onehot COL encodes it (one 0/1 column per category, sorted). Parquet needs the `parquet` extra,
    images the `images` extra.

    Args:
        files: .npy .npz .safetensors .csv .parquet files, or an image folder (ROOT/CLASS/IMAGE)
        columns: columns (csv, parquet) or arrays (npz, safetensors) by name or 0-based index, x1,x2; repeat for more fields
        target: the column or array put last; alone, every other column is a feature
        dtype: the features' dtype for csv and parquet (default float32)
        target_dtype: the target's dtype (default: int64 for integers, class indices for names, else --dtype)
        header: the csv's first line names the columns (default: detected)
        no_header: the csv's first line is data
        delimiter: the csv's cell separator (default ','; tab for tabs)
        onehot: text feature columns to one-hot encode (csv, parquet), a,b; repeatable
        stream: read a .parquet file or set ('shards/*.parquet', quoted) by row group on demand, as one table
        format: chat: a JSONL file of {"messages": [{"role", "content"}…]} or {"text"} lines as a language
            model's (input_ids, labels) items (data/chat.py: the chat template, cut or padded to --seq_len,
            labels -100 at the padding)
        tokenizer: the language model (lm://) whose tokenizer and chat template --format chat uses
        seq_len: --format chat's tokens per item
        train_on: --format chat's labels: all (every token but the padding) or completions (the assistant's
            replies only)
    """
    options = openers.Options(columns, target, dtype, target_dtype, header, no_header, delimiter, onehot, stream)
    if format is not None or tokenizer is not None or seq_len is not None or train_on is not None:
        return _open_chat(ctx, files, options, format, tokenizer, seq_len, train_on)
    return openers.open_dataset(files, options)


def _open_chat(ctx, files, options, format, tokenizer, seq_len, train_on):
    """--format chat: one JSONL file as (input_ids, labels) items (data/chat.py)."""
    if format != "chat":
        raise bad_argument("--format %s: the formats are chat (a language model's JSONL)" % format
                           if format is not None else "--tokenizer, --seq_len and --train_on go with --format chat",
                           "torch data open chat.jsonl --format chat --tokenizer LM --seq_len 512")
    given = options.given("columns", "target", "dtype", "target_dtype", "header", "no_header", "delimiter", "onehot",
                          "stream")
    if given or len(files) != 1:
        raise bad_argument("--format chat opens one JSONL file%s" % (", without --%s" % given[0] if given else ""))
    return chat.open_chat(files[0], tokenizer.tokenizer if tokenizer is not None else None, seq_len,
                          train_on or "all", tokenizer.context_length() if tokenizer is not None else None,
                          getattr(ctx.app, "memory", None))


@verb("data.info(Dataset dataset) -> Json", category="files",
      examples=("torch save $(torch randn 4 3) x.npy && torch data info $(torch data open x.npy)",), read_only=True)
def info(ctx, dataset):
    """Length, each field's shape (of one item) and dtype, and the class names when known; of a stream (Parquet,
    Arrow) its schema, files, rows, row groups or record batches and bytes on disk, from the files' metadata."""
    return DatasetInfo(describe(dataset))


class DatasetInfo(dict):
    """{length, fields, classes?}: JSON under --json and through the API, aligned text on a terminal."""

    def text(self):
        lines = ["length   %d" % self["length"]]
        if self.get("classes"):
            lines.append("classes  %s" % " ".join(self["classes"]))
        if self.get("standardize"):
            lines.append("standardize  field %d: mean %s std %s" % (self["standardize"]["field"],
                         _numbers(self["standardize"]["mean"]), _numbers(self["standardize"]["std"])))
        if self.get("tokens"):
            lines.append("tokens   %s" % _token_counts(self["tokens"]))
        lines += streaminfo.info_lines(self["stream"]) if self.get("stream") else []
        rows = [("FIELD", "SHAPE", "DTYPE")] + [
            (f["name"], "-" if f["shape"] is None else "[%s]" % ",".join(map(str, f["shape"])), f["dtype"])
            for f in self["fields"]]
        widths = [max(len(r[i]) for r in rows) for i in range(2)]
        lines += ["%s  %s  %s" % (r[0].ljust(widths[0]), r[1].ljust(widths[1]), r[2]) for r in rows]
        return "\n".join(lines) + "\n"


def _token_counts(c):
    """`data tokenize`'s counts on one line: tokens, documents, and what did not become an item."""
    left = ("%d dropped (the last partial window)" % c["dropped"]) if c["packed"] else \
        ("%d cut (past --seq_len)" % c["cut"])
    return "%d in %d documents, %s" % (c["tokens"], c["documents"], left)


def _numbers(values, most=8):
    """Learned statistics on one line: the first `most` numbers (%.4g), then how many more."""
    flat = torch.tensor(values, dtype=torch.float64).flatten().tolist()
    shown = ",".join("%.4g" % v for v in flat[:most])
    return "[%s%s]" % (shown, ",…+%d" % (len(flat) - most) if len(flat) > most else "")


@verb("data.head(Dataset dataset, int n=5) -> Json", category="files",
      examples=("torch save $(torch randn 4 3) x.npy && torch data head $(torch data open x.npy) 2",), read_only=True)
def head(ctx, dataset, n=5):
    """The first N items (default 5), one a line: a JSON list of its fields' values, as `torch value` prints them.

    Args:
        n: how many items
    """
    if n < 0:
        raise bad_argument("N must be 0 or more, got %d" % n)
    values, lines = [], []
    for i in range(min(n, len(dataset))):
        item = dataset[i]
        texts = [tensortext.tensor_json(t).decode() if isinstance(t, torch.Tensor) else dumps(t)
                 for t in (item if isinstance(item, (tuple, list)) else (item,))]
        lines.append("[%s]\n" % ",".join(texts))
        values.append([json.loads(x) for x in texts])
    return ItemRows(values, lines)


class ItemRows(list):
    """Items as JSON values (a list under --json and through the API); on a terminal one line each,
    every field's value as `torch value` prints it."""

    def __init__(self, values, lines):
        super().__init__(values)
        self.lines = lines

    def text(self):
        return "".join(self.lines)


@verb("data.split(Dataset dataset, float length1, float length2, float? length3=None, float? length4=None, "
      "float? length5=None, *, int? seed=None) -> Dataset[]", category="files", form=history_data.split,
      examples=("torch save $(torch arange 10) x.npy && torch data split $(torch data open x.npy) 0.8 0.2 --seed 0",))
def split(ctx, dataset, length1, length2, length3=None, length4=None, length5=None, seed=None):
    """torch.utils.data.random_split: two to five parts, by fractions (0.8 0.2) or counts (800 200); one
    handle a line. --seed S draws with torch.Generator().manual_seed(S) (the same index sets as PyTorch);
    without it, PyTorch's default generator (`torch manual_seed` seeds it). Of a stream (a Parquet set read by
    row group) each part keeps its rows in file order, so that its loader reads them piece by piece.

    Args:
        length1: the first part's fraction (0.8) or count (800)
        length2: the second part's
        seed: seed of the torch.Generator that draws the permutation
    """
    lengths = [x for x in (length1, length2, length3, length4, length5) if x is not None]
    if all(float(x).is_integer() for x in lengths) and sum(lengths) > 1:
        lengths = [int(x) for x in lengths]
    generator = torch.Generator().manual_seed(seed) if seed is not None else torch.default_generator
    try:
        parts = torch.utils.data.random_split(dataset, lengths, generator=generator)
    except ValueError as e:
        raise bad_argument("%s (the dataset has %d items)" % (str(e).split("\n")[0], len(dataset)),
                           "give fractions that sum to 1 (0.8 0.2) or counts that sum to the length") from None
    if pieces.cached(dataset):  # a stream: each part's rows in file order, so that a loader reads them by pieces
        for part in parts:
            part.indices = sorted(part.indices)
    return parts


@verb("data.transform(Dataset dataset, *, float[]? mean=None, float[]? std=None, int? one_hot=None, "
      "ScalarType? dtype=None, int[]? resize=None, int[]? center_crop=None, int? field=None, bool standardize=False, "
      "Dataset? standardize_like=None) -> Dataset",
      category="files", form=history_data.as_values, no_form=history_data.NOT_HELD,
      examples=("torch save $(torch arange 3) y.npy && torch data head $(torch data transform $(torch data open y.npy) --one_hot 3)",),
      read_only=True)
def transform(ctx, dataset, mean=None, std=None, one_hot=None, dtype=None, resize=None, center_crop=None, field=None,
              standardize=False, standardize_like=None):
    """A dataset whose items are transformed as they are read: --resize H,W (or S: the shorter edge),
    --center_crop H,W, --one_hot N, --dtype D, --standardize, --mean M --std S (normalize), in that order.

    Each changes field 0 (the input), --one_hot the last field (the label); --field K picks another
    for all of them. Image steps are torchvision's tensor transforms in plain torch (bilinear,
    antialiased resize); mean and std take one value or one per channel (0.485,0.456,0.406).
    --standardize is scikit-learn's StandardScaler fit on this dataset: each feature's mean and
    population std (ddof=0; a constant feature's std is taken as 1) are learned from its items, then
    subtracted and divided by; --standardize_like D2 applies the statistics D2 learned (fit on train,
    transform val). The result keeps them (`data info` shows them).

    Args:
        mean: normalize: subtracted, one value or one per channel
        std: normalize: divided by, as many values as --mean
        one_hot: the number of classes: F.one_hot of an integer label
        dtype: convert the field to this dtype
        resize: H,W, or one size for the shorter edge (bilinear, antialiased)
        center_crop: H,W, or one size for a square
        field: the item's field the transforms change (0-based; -1 is the last)
        standardize: learn each feature's mean and std from this dataset and apply them
        standardize_like: apply the statistics another dataset's --standardize learned
    """
    learned = standardize or standardize_like is not None
    given = {"resize": resize, "center_crop": center_crop, "one_hot": one_hot, "dtype": dtype,
             "normalize": (mean, std) if mean is not None or std is not None else None}
    if standardize and standardize_like is not None or learned and given["normalize"]:
        raise bad_argument("--standardize learns the statistics, --standardize_like copies them and --mean/--std "
                           "give them: use one")
    if not learned and not any(v is not None for v in given.values()):
        raise TorchshError("missing_argument", "no transform given",
                           "e.g. --mean 0.5 --std 0.25, --one_hot 10, --dtype float32, --resize 32,32, --standardize")
    item = dataset[0] if len(dataset) else None
    count = len(item) if isinstance(item, (tuple, list)) else 1
    steps = [transforms.Step(op, _field(op, field, count), _args(op, given[op]))
             for op in transforms.ORDER if given.get(op) is not None]
    if learned:
        steps.append(_standardize_step(dataset, steps, field, count, standardize_like))
    out = transforms.TransformedDataset(dataset, steps)
    if item is not None:
        out[0]  # a transform that does not fit the items fails now, not in the middle of an epoch
    return out


def _standardize_step(dataset, steps, field, count, like):
    """The standardize step (last: normalize is refused beside it), its statistics learned from the dataset
    as the earlier steps leave it, or copied from `like`."""
    if like is not None:
        stats = known(like, "standardization")
        if stats is None:
            raise bad_argument("--standardize_like: that dataset learned no statistics",
                               "make it with `torch data transform TRAIN --standardize`")
        k = stats["field"] if field is None else _field("standardize", field, count)
        return transforms.Step("standardize", k, (stats["mean"], stats["std"]))
    if not len(dataset):
        raise bad_argument("--standardize learns from the items, and the dataset has none")
    k = _field("standardize", field, count)
    mean, std = learn_statistics(transforms.TransformedDataset(dataset, steps) if steps else dataset, k)
    return transforms.Step("standardize", k, (mean, std))


def _field(op, field, count):
    k = field if field is not None else (-1 if op == "one_hot" else 0)
    if not -count <= k < count:
        raise bad_argument("--field %d: the items have %d field%s" % (k, count, "" if count == 1 else "s"),
                           "`torch data info D` lists them")
    return k % count


def _args(op, value):
    if op == "normalize":
        mean, std = (_as_list(v) for v in value)
        if mean is None or std is None or len(mean) != len(std):
            raise bad_argument("normalize takes --mean and --std, with as many values each",
                               "e.g. --mean 0.5 --std 0.25, or --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225")
        return (list(mean), list(std))
    if op in ("resize", "center_crop"):
        value = _as_list(value)
        if len(value) not in (1, 2) or min(value) < 1:
            raise bad_argument("--%s takes H,W or one size, each at least 1, got %s" % (op, value))
        return (list(value),)
    if op == "one_hot" and value < 1:
        raise bad_argument("--one_hot takes the number of classes, got %d" % value)
    return (value,)


def _as_list(value):
    """A list flag's value: one number arrives as itself (`--mean 0.5`, `--resize 32`)."""
    return value if value is None or isinstance(value, list) else [value]
