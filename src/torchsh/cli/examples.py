"""One runnable example per op for `torch OP --help`, generated from the op's row, never written per op.

Candidates cross the op's overloads with a few small literal tensors (a matrix, a square positive-definite
matrix, a vector, positive and unit-interval values, integers, booleans, a batch, an image, a sequence) and
argument values chosen by kind and name; a candidate is kept when in-process PyTorch accepts it and the
CLI's binder picks the same overload for its words. Layers, optimizers and schedulers are tried by
constructing their class. Ops for which no candidate works show no example (`torch ops` still lists them).
Examples are plain bash: tensors are `$(torch tensor '[…]')`, so each line runs as printed.
"""
import itertools
import json
import warnings

import torch

from torchsh.call import bind, tokens
from torchsh.quoting import shell_word
from torchsh.table.kinds import TENSOR_KINDS
from torchsh.vocab import dtype_name

# profile -> literal data; every tensor argument of a candidate takes the same profile (index-like
# arguments may take an index tensor instead), tried in this order
PROFILES = (
    [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]],
    [[2.0, 0.5], [0.5, 1.0]],
    [0.5, -1.0, 2.0],
    [[0.5, 1.0, 2.0], [1.5, 0.25, 0.75]],
    [[0.1, 0.5, 0.9], [0.3, 0.7, 0.2]],
    [[1, 2, 3], [4, 0, 2]],
    [[True, False, True], [False, True, True]],
    [[[2.0, 0.5], [0.5, 1.0]], [[1.0, 0.0], [0.0, 3.0]]],
    [[[[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [1.0, 0.0, -0.5]]]],
    [[[0.5, -1.0, 2.0]]],
    [[[[[0.5, -1.0], [2.0, 1.5]], [[0.25, -0.75], [1.0, 0.0]]]]],
    [1, 0, 2],
    [2.5],
)
VECTOR = [0.5, -1.0, 2.0]
INDEX_LIKE = ("index", "indices", "target", "labels", "mask", "condition", "offsets", "weight")
INDEXES = ([[0, 1, 0], [1, 0, 1]], [0, 1], [0, 2, 1])
INTS = {"dim": (1, 0, -1), "dim0": (0,), "dim1": (1,), "k": (2, 1), "n": (2, 3), "chunks": (2,), "sections": (2,),
        "split_size": (1,), "repeats": (2,), "steps": (3,), "window_length": (4,), "num_classes": (3,),
        "end": (4,), "high": (5,), "start": (0,), "length": (1,), "diagonal": (0,), "row": (3,), "col": (3,),
        "groups": (1,), "num_groups": (1,), "upscale_factor": (1,), "downscale_factor": (1,), "bins": (4,),
        "num_samples": (2,), "source": (0,), "destination": (1,), "index": (0,), "ord": (2,), "p": (2,),
        "in_features": (3,), "out_features": (2,), "in_channels": (1,), "out_channels": (2,),
        "kernel_size": (2,), "num_features": (3,), "normalized_shape": (3,), "embedding_dim": (3,),
        "num_embeddings": (5,), "input_size": (3,), "hidden_size": (4,), "d_model": (4,), "nhead": (2,),
        "embed_dim": (4,), "num_heads": (2,), "T_max": (10,), "step_size": (2,), "total_iters": (4,),
        "T_0": (5,), "total_steps": (10,), "output_size": (2,), "size": (3,)}
INT_LISTS = {"size": ([2, 3],), "shape": ([3, 2], [6]), "dims": ([1, 0], [0]), "dim": ([1], [0]),
             "shifts": ([1],), "repeats": ([2, 1],), "pad": ([1, 1],), "normalized_shape": ([3],),
             "output_size": ([2], [2, 2]), "kernel_size": ([2],), "milestones": ([2, 4],), "sizes": ([3, 2],),
             "split_sizes": ([1, 2],), "split_size_or_sections": ([1, 2],), "indices": ([1],),
             "stride": ([1],), "padding": ([0],), "dilation": ([1],), "reps": ([2, 1],), "s": ([3],)}
FLOATS = {"p": (0.5,), "eps": (1e-5,), "lambd": (0.5,), "max_lr": (0.1,), "base_lr": (0.01,), "gamma": (0.9,),
          "factor": (0.5,), "start_factor": (0.5,), "lr": (0.1,), "min_val": (-0.5,), "max_val": (0.5,),
          "threshold": (0.1,), "value": (0.5,), "end": (1.0,), "start": (0.0,), "q": (0.5,)}
STRS = {"reduction": "mean", "equation": "ij,kj->ik", "indexing": "ij", "norm": "ortho", "approximate": "tanh",
        "rounding_mode": "floor", "interpolation": "linear", "mode": "reduced", "side": "left", "UPLO": "L",
        "reduce": "sum", "padding_mode": "zeros", "nonlinearity": "tanh"}
SCALARS = {"other": (2,), "exponent": (2,), "fill_value": (2.5,), "value": (0.5,), "min": (-0.5,),
           "max": (0.5,), "alpha": (2,), "start": (0,), "end": (4,), "step": (1,), "threshold": (0.1,)}
MAX_TRIES = 150
_FAKE_HANDLE = "tensor://0aa%05x"


class _NoContext:
    """The request a trial runs in: no device setting, and nothing else (a verb that reads files or
    handles fails its trial, and shows no example)."""
    device = None  # layers are built on the default device, as with no TORCHSH_DEVICE


_FOUND = {}  # id(op) -> (op, example): rows live as long as their table; kept here so ids stay theirs


def example(op):
    """The first candidate command line that runs, or None (computed once per row)."""
    found = _FOUND.get(id(op))
    if found is None or found[0] is not op:
        found = _FOUND[id(op)] = (op, _example(op))
    return found[1]


def _example(op):
    # trials draw random numbers (randn, dropout) and may seed: the daemon's RNG must not notice them
    with warnings.catch_warnings(), torch.no_grad(), torch.random.fork_rng(devices=[]):
        warnings.simplefilter("ignore")
        if op.group:
            return None
        if op.class_kind == "nn":
            return _class_example(op, "nn", lambda v: op.call(_NoContext(), **v))
        if op.class_kind == "optim":
            return _class_example(op, "optim", lambda v: op.cls(torch.nn.Linear(3, 2, bias=False).parameters(), **v))
        if op.class_kind == "sched":
            return _class_example(op, "sched", lambda v: op.cls(_sgd(), **v))
        if op.verb and op.lockfree:
            return None  # the daemon's own verbs (stop, free, ops): their docs say how to use them
        return _op_example(op)


def _sgd():
    return torch.optim.SGD(torch.nn.Linear(3, 2, bias=False).parameters(), lr=0.1)


_LEAD = {"nn": "", "optim": "$(torch nn linear 3 2 --bias false)", "sched":
         "$(torch optim sgd $(torch nn linear 3 2 --bias false) --lr 0.1)"}


def _class_example(op, group, build):
    ov = op.overloads[0]
    args = [a for a in ov.args if a.required and a.kind not in ("handles", "optimizer", "argv")]
    if any(a.kind in ("tensor", "tensors", "module", "modules", "handle", "scheduler") for a in args):
        return None
    for values in itertools.islice(itertools.product(*(_values(a, None) for a in args)), MAX_TRIES):
        given = dict(zip((a.name for a in args), values))
        try:
            build(dict(given))
        except Exception:  # noqa: BLE001 - PyTorch refusing a candidate is the answer we are looking for
            continue
        words = [op.display_name] + ([_LEAD[group]] if _LEAD[group] else [])
        for a in args:
            words += (["--" + a.name] if a.keyword_only else []) + [_word(a, given[a.name])]
        return "torch " + " ".join(words)
    return None


def _op_example(op):
    tries = 0
    for ov in op.overloads[:6]:
        args = [a for a in ov.args if a.required]
        if any(a.kind not in _WRITABLE for a in args):
            continue
        for profile in PROFILES:
            tensor_args = [a for a in args if a.kind == "tensor"]
            later = tensor_args[1:]  # a second tensor may be a vector where the first is a matrix (mv)
            for values in itertools.product(*(_values(a, profile, a in later) for a in args)):
                tries += 1
                if tries > MAX_TRIES:
                    return None
                if _runs(op, ov, args, values) and _binds(op, ov, args, values):
                    return _command(op, args, values)
    return None


_WRITABLE = ("tensor", "tensors", "int", "float", "scalar", "bool", "int_list", "float_list", "str", "dtype",
             "device")


def _values(a, profile, later=False):
    """Candidate values for one required argument (tensors as literal data)."""
    kind, name = a.kind, a.name
    if kind == "tensor":
        own = (profile, VECTOR) if later and profile != VECTOR else (profile,)
        return (own + INDEXES) if name in INDEX_LIKE else own
    if kind == "tensors":
        return ([profile, profile],)
    if kind == "int":
        return INTS.get(name, (1, 0, 2))
    if kind == "int_list":
        return INT_LISTS.get(name, ([1], [2, 3]))
    if kind == "float":
        return FLOATS.get(name, (0.5, 2.0))
    if kind == "float_list":
        return ([0.5, 0.5],)
    if kind == "scalar":
        return SCALARS.get(name, (2, 0.5))
    if kind == "bool":
        return (False, True)
    if kind == "str":
        return (STRS[name],) if name in STRS else ()
    if kind == "dtype":
        return ("float64",)
    if kind == "device":
        return ("cpu",)
    return ()


def _runs(op, ov, args, values):
    positional, keywords = [], {}
    for a, v in zip(args, values):
        v = _pytorch(a, v)
        if a.keyword_only:
            keywords[a.name] = v
        elif a.type_text == "*Tensor":
            positional.extend(v)
        else:
            positional.append(v)
    try:
        if op.verb:  # a hand-written verb is tried only if it needs nothing of the request (files, handles)
            op.call(_NoContext(), **{a.name: _pytorch(a, v) for a, v in zip(args, values)})
        else:
            op.call(*positional, **keywords)
        return True
    except Exception:  # noqa: BLE001 - PyTorch refusing a candidate is the answer we are looking for
        return False


def _pytorch(a, v):
    if a.kind == "tensor":
        return torch.tensor(v)
    if a.kind == "tensors":
        return [torch.tensor(x) for x in v]
    if a.kind == "dtype":
        return getattr(torch, v)
    if a.kind == "device":
        return torch.device(v)
    return v


def _binds(op, ov, args, values):
    """Would the CLI bind these words to this very overload?"""
    positionals, flags, n = [], {}, 0
    for a, v in zip(args, values):
        if a.kind in TENSOR_KINDS:
            toks = []
            for _ in (v if a.kind == "tensors" else [v]):
                n += 1
                toks.append(tokens.Token("handle", _FAKE_HANDLE % n, _FAKE_HANDLE % n))
        else:
            toks = [tokens.from_word(_word(a, v, quote=False))]
        if a.keyword_only:
            flags[a.name] = toks if a.kind == "tensors" else toks[0]
        else:
            positionals += toks
    binding, _ = bind.choose(op, positionals, flags)
    return binding is not None and binding.overload is ov


def _command(op, args, values):
    words = ["torch", op.display_name]
    for a, v in zip(args, values):
        if a.keyword_only:
            words.append("--" + a.name)
        words.append(_word(a, v))
    return " ".join(words)


def _word(a, v, quote=True):
    if a.kind == "tensor":
        return "$(torch tensor %s)" % shell_word(json.dumps(v, separators=(",", ":")))
    if a.kind == "tensors":
        return " ".join(_word(_TENSOR, x) for x in v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        text = json.dumps(v, separators=(",", ":"))
        return shell_word(text) if quote else text
    if isinstance(v, torch.dtype):
        return dtype_name(v)
    return shell_word(str(v)) if quote else str(v)


class _TENSOR:
    kind = "tensor"
