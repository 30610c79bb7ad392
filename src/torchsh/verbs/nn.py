"""Modules from the shell: `torch nn KIND ARGS…` for every torch.nn layer, `nn list`, `nn sequential`,
`forward` and `predict`.

One op-table row per layer class (`nn.linear`, `nn.conv2d`, `nn.lstm`, …), typed from the class's
own signature (table/signature.py), so `torch nn linear --help`, `torch ops nn`, the JSON API and the
shell modules see each layer like any op. The class name works too (`torch nn Linear 1 1`).
Modules built from handles are the same Python objects: a child handle is a live view into the
container it was put in (training the container trains it).
"""
import inspect
import shlex

import torch

from torchsh import memory
from torchsh.call import nested
from torchsh.contract import card as cards, encode
from torchsh.errors import TorchshError, bad_argument
from torchsh.formats import rowsfile
from torchsh.history import forms, verbforms
from torchsh.recipes.base import record
from torchsh.registry.handles import looks_like_handle
from torchsh.results import Table, Text
from torchsh.table import classes as tables, docargs
from torchsh.table.from_torch import first_paragraph, summary_line
from torchsh.table.signature import WordsOpSpec, class_args, fit_values
from torchsh.table.spec import ArgSpec, OpSpec, Overload, parse_schema
from torchsh.train import predict as predictions
from torchsh.verbs import verb

# words of hand-written `nn` verbs: a layer class of the same snake_case name would be shadowed
VERB_WORDS = {"list", "sequential", "parameters", "info", "summary", "train", "eval", "to", "init", "save", "load",
              "jit_load"}


def generated_rows():
    """One row per torch.nn layer class: name nn.<snake_case>, arguments from the class signature."""
    rows = []
    for word, cls in tables.layers().items():
        if word in VERB_WORDS:
            continue
        args = class_args(cls, tables.SIGNATURE_DROPS.get(cls.__name__, ()), tables.SIGNATURE_OF.get(cls.__name__))
        if cls.__name__ == "RNN":  # RNN reads `nonlinearity` from **kwargs; RNNBase does not declare it
            args += (ArgSpec("nonlinearity", "str", default="tanh", keyword_only=True, type_text="str"),)
        doc = first_paragraph(cls)
        rows.append(OpSpec(
            name="nn." + word, category="nn", summary=summary_line(doc) or "torch.nn.%s" % cls.__name__,
            overloads=[Overload(args=args, returns="Module")], call=_builder(cls, args), verb=True, doc=doc,
            aliases=(cls.__name__,), arg_docs=docargs.arg_docs(cls, [Overload(args=args)]),
            cls=cls, class_kind="nn", words_only=True, word_aliases=("nn." + cls.__name__,), form=forms.constructed))
    return rows + [_sequential_row()]


def _sequential_row():
    """nn.sequential by hand: its words are layer specs, which the @verb rows cannot show in usage."""
    overloads = []
    for schema in ("nn.sequential(Handle[] modules) -> Module", "nn.sequential(Argv layers) -> Module"):
        _, _, args, returns = parse_schema(schema, overload_names=False)
        overloads.append(Overload(args=tuple(args), returns=returns))
    doc = " ".join(sequential.__doc__.split("\n\n")[0].split())
    return WordsOpSpec(name="nn.sequential", category="nn", overloads=overloads, call=sequential, verb=True,
                       summary="torch.nn.Sequential of module handles or inline layer specs.", doc=doc,
                       aliases=("Sequential",),
                       word_aliases=("nn.Sequential",), words_metavar="LAYER", form=forms.constructed,
                       examples=("torch nn sequential 'linear 2 8' relu 'linear 8 1'",
                                 "torch nn sequential $(torch nn linear 2 8) $(torch nn relu)"))


def _builder(cls, args):
    def build(ctx, **values):
        return construct(ctx, cls, fit_values(args, values))
    build.__name__ = "nn_" + cls.__name__
    return build


def construct(ctx, cls, values):
    """cls(**values), on the caller's default device (TORCHSH_DEVICE) unless --device says otherwise; refused
    with out_of_memory first when its parameters and buffers would not fit the budget (every face builds
    layers here: `nn KIND`, `nn sequential`'s words, a sweep's --model)."""
    if ctx.device and values.get("device") is None and "device" in _params(cls):
        values["device"] = torch.device(ctx.device)
    device = values.get("device")
    on_meta = values if device is None else dict(values, device="meta")  # an explicit device beats the context's
    memory.admit_module(ctx, lambda: cls(**on_meta), cls.__name__, device)
    try:
        return record(cls(**values), cls.__name__, values)  # how it was built: sessions and `cp` rebuild it
    except (TypeError, ValueError, AssertionError) as e:
        text = str(e).split("\n")[0] or type(e).__name__
        raise bad_argument("%s: %s" % (cls.__name__, text), "`torch nn %s --help` shows its arguments"
                           % cls.__name__) from None


def _params(cls):
    sig_of = tables.SIGNATURE_OF.get(cls.__name__, cls)
    return inspect.signature(sig_of.__init__).parameters


# -- listing --------------------------------------------------------------------------------------

@verb("nn.list() -> Json", category="nn", lockfree=True,
      examples=("torch nn list",), read_only=True)
def nn_list(ctx):
    """Every layer kind `torch nn KIND` builds, with its class and signature (--json for rows)."""
    rows = [{"kind": op.name[3:], "class": op.cls.__name__, "signature": tables.constructor_text(op),
             "summary": op.summary} for op in tables.built_by(ctx.table, "nn", "nn")]
    return Table(rows, ("kind", "signature"))


# -- containers -----------------------------------------------------------------------------------
def sequential(ctx, modules=None, layers=None):
    """torch.nn.Sequential of module handles (also one per stdin line) or inline specs: 'linear 2 8' relu.

    Handles given here stay valid: each is the very child module inside the container (a live view).
    """
    items = modules if modules is not None else layers
    _check_one_word_per_layer(ctx, items)
    children = []
    for word in items:
        if looks_like_handle(word):
            children.append(ctx.registry.get(word, "nn"))
        else:
            children.append(build_from_words(ctx, shlex.split(word)))
    if not children:
        raise TorchshError("missing_argument", "sequential needs at least one layer",
                           "torch nn sequential 'linear 2 8' relu 'linear 8 1'")
    return record(torch.nn.Sequential(*children), "Sequential", {"modules": children})


def _check_one_word_per_layer(ctx, items):
    """`nn sequential linear 2 8 relu`: a layer's arguments came as words of their own. Said as what to type
    (each layer one word: 'linear 2 8' relu) before `linear` alone is refused for its missing arguments."""
    groups = []
    for word in items:
        if groups and " " not in word and not looks_like_handle(word) and not _is_layer_kind(ctx, word):
            groups[-1].append(word)
        else:
            groups.append([word])
    if len(groups) < len(items):
        typed = " ".join(shlex.quote(" ".join(g)) if len(g) > 1 else g[0] for g in groups)
        raise TorchshError("usage", "a layer's arguments came as words of their own",
                           "each layer is one word: %s" % typed)


def _is_layer_kind(ctx, word):
    try:
        op, _, rest = ctx.table.resolve(["nn", word])
    except TorchshError:
        return False
    return op.class_kind == "nn" and not rest


def build_from_words(ctx, words):
    """One inline layer spec, e.g. ['linear', '2', '8', '--bias', 'false'], built as `torch nn …` would."""
    op, rest = nested.resolve(ctx, ["nn"] + words)
    if op.class_kind != "nn":
        raise bad_argument("%r is not a layer kind" % " ".join(words), "`torch nn list` shows the kinds")
    return nested.call_words(ctx, op, rest, "a layer")


# -- running ----------------------------------------------------------------------------------------
@verb("forward(Module model, Tensor[] inputs) -> Tensor[]", category="nn", form=verbforms.forward,
      examples=("torch forward $(torch nn linear 3 2) $(torch randn 4 3)",))
def forward(ctx, model, inputs):
    """Call the model on the inputs: model(*inputs), PyTorch's raw call. Several outputs print one per line
    (LSTM: output, h, c).

    Runs in the model's current mode (train or eval) and records the graph unless --no_grad. It reads no model
    card: inputs go in as they are, with no preprocessing (`torch predict` applies what the model was trained
    under, and decides its classes).
    """
    return flat_outputs(model(*inputs))


@verb("predict(Module model, Tensor[] inputs) -> Tensor[]",
      "predict(Module model, Dataset dataset, *, int batch_size=256, OutPath? out=None, bool proba=False) -> Json",
      category="nn", form=verbforms.predict,
      examples=("torch predict $(torch nn linear 3 2) $(torch randn 4 3)",
                "printf 'x1,x2,y\\n1,2,a\\n3,4,b\\n' > t.csv && "
                "torch predict $(torch nn linear 2 2) $(torch data open t.csv --target y) --proba"), read_only=True)
def predict(ctx, model, inputs=None, dataset=None, batch_size=256, out=None, proba=False):
    """The model on raw inputs as its card says (`torch model card M`): the inputs preprocessed as in training
    (standardized with the training statistics), then model(*inputs) under no-grad in eval mode (dropout off,
    batch-norm running stats); the mode is restored. On tensors: the outputs. Over a dataset: one row per item,
    in order: its `row` (0-based, as pandas' index) or image `path`, the `prediction` (the class the model's
    task decides: argmax of k scores, one logit over 0 for a binary model; by name when the model or dataset
    knows the classes; a regression's output) and with --proba each class's probability; tab-separated with a
    header, or --out FILE. Data that does not fit the card (other columns, their order, width) is refused
    with the fix (train/predict.py, contract/encode.py).

    Args:
        batch_size: items per forward pass
        out: a .csv, .jsonl or .parquet file for the rows (replaced atomically, as `torch save`)
        proba: add one column per class: its probability (softmax; a binary model's sigmoid)
    """
    if dataset is not None:
        return _predict_dataset(model, dataset, batch_size, out, proba)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            return flat_outputs(model(*encode.batch(cards.of_model(model), inputs)))
    finally:
        model.train(was_training)


def _predict_dataset(model, dataset, batch_size, out, proba):
    outputs = predictions.run(model, dataset, batch_size)
    rows = rowsfile.Rows(predictions.columns(outputs, proba), predictions.values(outputs, proba),
                         float32=outputs.output.dtype != torch.float64)
    if out is None:
        return rows
    rowsfile.write(out, rows)
    return None


def flat_outputs(out):
    """A tensor, or the tensors of nested tuples in order: LSTM's (output, (h, c)) -> [output, h, c]."""
    if isinstance(out, torch.Tensor):
        return out
    found = []

    def walk(x):
        if isinstance(x, (tuple, list)):
            for y in x:
                walk(y)
        elif isinstance(x, torch.Tensor):
            found.append(x)
    walk(out)
    return found
