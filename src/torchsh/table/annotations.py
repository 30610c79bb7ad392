"""A Python parameter's annotation (or, without one, its default) -> the argument kind (a row of table/kinds.py):
the one table both readers of Python signatures go by, the nn/optim/sched classes' constructors
(table/signature.py) and PyTorch's Python functions (table/from_torch.py).

Unions the shell cannot narrow (`int | tuple[int, int] | str` for padding) are no row here: a class reads them as
`json` (any word, read as JSON when it looks like JSON: `3`, `'[3,3]'`, `same`), and a function whose parameter
nothing types is left out rather than guessed.
"""
import re

from torchsh.table.spec import split_top_level

# (regex searched in the annotation's text, kind, the type a class's --help shows); first match wins.
# A function's --help shows PyTorch's own annotation instead.
ANNOTATION_KINDS = (
    (r"^(list|tuple|List|Tuple|Sequence)\[Tensor(, \.\.\.)?\]", "tensors", "Tensor[]"),
    (r"^(torch\.)?dtype|dtype \| None", "dtype", "ScalarType?"),
    (r"^(torch\.)?device|device \| None", "device", "Device?"),
    # `Tensor | float`: a number is accepted where PyTorch takes one (the tensor kind reads numbers)
    (r"^(torch\.)?Tensor( \| (float|int))?( \| None)?$|^Optional\[Tensor\]$", "tensor", "Tensor?"),
    (r"Iterable\[Module\]", "modules", "Module[]"),
    (r"Module|EncoderLayer|DecoderLayer|TransformerEncoder|TransformerDecoder", "module", "Module"),
    (r"^Optimizer", "optimizer", "Optimizer"),
    (r"LRScheduler\]", "handles", "Scheduler[]"),
    (r"^str \| .*Callable", "str", "str"),  # a loss or activation by name; a callable cannot come from a shell
    (r"^bool", "bool", "bool"),
    (r"^(int \| float|float \| int)\b", "float", "float"),  # lp_pool's norm_type: any number
    (r"^int \| list\[int\]", "int_list", "int | int[]"),
    (r"^(Iterable|Sequence|list|List)\[int\]$|Sequence\[int\]|_size|BroadcastingList", "int_list", "int[]"),
    (r"^tuple\[float( \| (None|(torch\.)?Tensor))?, float( \| (None|(torch\.)?Tensor))?\]$", "float_list", "float[2]"),
    (r"^(list|List)\[float\]( \| None)?$", "float_list", "float[]"),
    (r"^int( \| None)?$", "int", "int"),
    (r"^float( \| None)?$", "float", "float"),
    (r"^(str|Literal\[.*\])( \| None)?$", "str", "str"),
    # TorchScript's BroadcastingList2[int] (kernel_size, stride…) reads back as `None`: an int or int list
    (r"^None$", "int_list", "int[]"),
)

# A parameter's name that says its kind whatever its annotation: TorchScript spells the dtype type `int`
# (F.softmax's dtype)
NAMED_KINDS = {"dtype": ("dtype", "ScalarType?"), "out_dtype": ("dtype", "ScalarType?"),
               "device": ("device", "Device?")}

# An unannotated parameter's kind from its default's type (bool before int: True is an int too)
DEFAULT_KINDS = ((bool, "bool"), (int, "int"), (float, "float"), (str, "str"))


def annotation_text(ann):
    """An annotation as text: `int | None` for Optional[int], `<class 'int'>` and typing.* spelled plainly."""
    text = ann if isinstance(ann, str) else ann.__name__ if isinstance(ann, type) else str(ann)
    text = re.sub(r"<class '([\w.]+)'>", r"\1", text)
    text = text.replace("typing.", "").replace("collections.abc.", "")
    text = re.sub(r"Union\[(.*)\]$", lambda m: " | ".join(s.strip() for s in split_top_level(m.group(1))), text)
    text = re.sub(r"Optional\[(.*)\]$", r"\1 | None", text)
    return text.replace("NoneType", "None")


def annotated_kind(text):
    """(kind, the type a class's help shows) for an annotation's TEXT, or None when no row types it."""
    for pattern, kind, type_text in ANNOTATION_KINDS:
        if re.search(pattern, text):
            return kind, type_text
    return None


def default_kind(default):
    """The kind an unannotated parameter's DEFAULT says, or None (None itself, an object)."""
    return next((kind for t, kind in DEFAULT_KINDS if isinstance(default, t)), None)
