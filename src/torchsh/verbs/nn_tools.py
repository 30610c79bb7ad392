"""Looking at and changing a built module: `nn parameters`, `nn info`, `nn train`, `nn eval`, `nn to`,
`nn init`, `nn summary` (its torchinfo-like counting: models/summary.py).

Parameter handles are the module's own Parameter objects (live views): gradients after backward and
updates after an optimizer step show through them. `nn to` converts in place the way Module.to does
(each parameter keeps its identity and stays a leaf), so optimizers built earlier keep working.
"""
import torch

from torchsh.errors import TorchshError, bad_argument
from torchsh.history import verbforms
from torchsh.models.summary import summarize
from torchsh.text.columns import print_table
from torchsh.verbs import verb
from torchsh.vocab import dtype_name


class NamedHandles(dict):
    """name -> handle; prints `name handle` lines, --json keeps the mapping."""

    def text(self):
        return "".join("%s %s\n" % kv for kv in self.items())


@verb("nn.parameters(Module model, *, bool named=False) -> Tensor[]", category="nn", form=verbforms.parameters,
      examples=("torch nn parameters $(torch nn linear 3 2) --named",), read_only=True)
def parameters(ctx, model, named=False):
    """The model's parameters as tensor handles (live views), in model.parameters() order; --named adds names."""
    if named:
        return NamedHandles((name, ctx.put(p)) for name, p in model.named_parameters())
    return list(model.parameters())


class Info(dict):
    def text(self):
        head = "%s  %s  %d parameters (%d trainable)  %s  %s\n" % (
            self["kind"], self["mode"], self["parameters"], self["trainable"], self["dtype"], self["device"])
        rows = [(t["name"], t["role"], t["shape"], t["dtype"], "grad" if t["requires_grad"] else "")
                for t in self["tensors"]]
        return head + (print_table(rows, ("name", "role", "shape", "dtype", "")) if rows else "")


@verb("nn.info(Module model) -> Json", category="nn", lockfree=True,
      examples=("torch nn info $(torch nn linear 3 2)",), read_only=True)
def info(ctx, model):
    """Kind, mode, parameter counts, and every parameter and buffer with shape and dtype (--json for data)."""
    params = list(model.parameters())
    tensors = [{"name": n, "role": "parameter", "shape": list(p.shape), "dtype": dtype_name(p.dtype),
                "requires_grad": p.requires_grad} for n, p in model.named_parameters()]
    tensors += [{"name": n, "role": "buffer", "shape": list(b.shape), "dtype": dtype_name(b.dtype),
                 "requires_grad": False} for n, b in model.named_buffers()]
    first = params[0] if params else None
    return Info(kind=type(model).__name__, mode="train" if model.training else "eval",
                parameters=sum(p.numel() for p in params),
                trainable=sum(p.numel() for p in params if p.requires_grad),
                dtype=dtype_name(first.dtype) if first is not None else "none",
                device=str(first.device) if first is not None else "cpu",
                children=[{"name": n, "kind": type(c).__name__} for n, c in model.named_children()],
                tensors=tensors)


@verb("nn.train(Module model) -> None", category="nn", writes=("model",), form=verbforms.method("train", "model"),
      examples=("torch nn train $(torch nn dropout)",))
def train(ctx, model):
    """Put the model in training mode (dropout on, batch-norm updates its running statistics)."""
    model.train()


@verb("nn.eval(Module model) -> None", category="nn", writes=("model",), form=verbforms.method("eval", "model"),
      examples=("torch nn eval $(torch nn dropout)",))
def eval_(ctx, model):
    """Put the model in evaluation mode (dropout off, batch-norm uses its running statistics)."""
    model.eval()


@verb("nn.to(Module model, *, Device? device=None, ScalarType? dtype=None) -> None", category="nn", writes=("model",),
      no_form="Module.to is not written yet",
      examples=("torch nn to $(torch nn linear 3 2) --dtype float64",))
def to(ctx, model, device=None, dtype=None):
    """Move/convert parameters and buffers in place (Module.to): handles and optimizers stay valid."""
    if device is None and dtype is None:
        raise TorchshError("missing_argument", "nn to needs --device or --dtype", "torch nn to $m --dtype float64")
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise bad_argument("Module.to only takes floating point or complex dtypes, not %s" % dtype_name(dtype))
    model.to(device=device, dtype=dtype)


# kind -> (torch.nn.init function, the flags it takes, whether it needs a matrix (2+ dims))
INITS = {
    "kaiming_uniform": (torch.nn.init.kaiming_uniform_, ("a", "mode", "nonlinearity"), True),
    "kaiming_normal": (torch.nn.init.kaiming_normal_, ("a", "mode", "nonlinearity"), True),
    "xavier_uniform": (torch.nn.init.xavier_uniform_, ("gain",), True),
    "xavier_normal": (torch.nn.init.xavier_normal_, ("gain",), True),
    "orthogonal": (torch.nn.init.orthogonal_, ("gain",), True),
    "normal": (torch.nn.init.normal_, ("mean", "std"), False),
    "trunc_normal": (torch.nn.init.trunc_normal_, ("mean", "std", "a", "b"), False),
    "uniform": (torch.nn.init.uniform_, ("a", "b"), False),
    "constant": (torch.nn.init.constant_, ("val",), False),
    "zeros": (torch.nn.init.zeros_, (), False),
    "ones": (torch.nn.init.ones_, (), False),
}
INIT_ALIASES = {"kaiming": "kaiming_uniform", "xavier": "xavier_uniform"}


@verb("nn.init(str kind, Handle[] targets, *, float? a=None, float? b=None, float? mean=None, float? std=None, "
      "float? val=None, float? gain=None, str? mode=None, str? nonlinearity=None) -> None", category="nn",
      writes=("targets",), no_form="torch.nn.init is not written yet",
      examples=("torch nn init normal $(torch nn linear 3 2) --std 0.02",))
def init(ctx, kind, targets, **flags):
    """Fill parameters in place with torch.nn.init.KIND_: kaiming[_uniform|_normal], xavier[_uniform|_normal],
    orthogonal, normal, trunc_normal, uniform, constant, zeros, ones.

    A tensor handle is filled itself; a module stands for its weight matrices (parameters named
    *weight with 2+ dims) for kaiming, xavier and orthogonal, and for all its parameters otherwise.
    Flags follow PyTorch (--a --b --mean --std --val --gain --mode --nonlinearity); every value is
    checked before any tensor changes.
    """
    name = INIT_ALIASES.get(kind, kind)
    if name not in INITS:
        raise bad_argument("unknown init %r" % kind, "kinds: %s" % ", ".join(sorted(INITS) + sorted(INIT_ALIASES)))
    fn, allowed, matrices = INITS[name]
    given = {k: v for k, v in flags.items() if v is not None}
    extra = sorted(set(given) - set(allowed))
    if extra:
        raise bad_argument("%s takes no --%s" % (name, extra[0]), "it takes: %s" % (" ".join("--" + a for a in allowed) or "no flags"))
    if "nonlinearity" in given or "mode" in given:
        _check_kaiming(given)
    tensors = _init_targets(ctx, targets, matrices, name)
    with torch.no_grad():
        for t in tensors:
            fn(t, **given)


def _check_kaiming(given):
    try:
        torch.nn.init.calculate_gain(given.get("nonlinearity", "leaky_relu"), given.get("a", 0))
    except ValueError as e:
        raise bad_argument(str(e), "nonlinearities: linear, conv1d, conv2d, conv3d, sigmoid, tanh, relu, leaky_relu, selu") from None
    if given.get("mode", "fan_in") not in ("fan_in", "fan_out"):
        raise bad_argument("mode must be fan_in or fan_out, not %r" % given["mode"])


def _init_targets(ctx, targets, matrices, name):
    out = []
    for h in targets:
        entry = ctx.registry.entry(h, ("tensor", "nn"))
        if entry.kind == "tensor":
            if matrices and entry.obj.dim() < 2:
                raise bad_argument("%s needs a tensor with 2 or more dimensions, %s has shape %s"
                                   % (name, h, list(entry.obj.shape)))
            out.append(entry.obj)
        else:
            out += [p for n, p in entry.obj.named_parameters()
                    if not matrices or (n.endswith("weight") and p.dim() >= 2)]
    return out


@verb("nn.summary(Module model, *, int[] input_shape, ScalarType? dtype=None, int depth=3) -> Json", category="nn",
      summary="Every module call of a forward pass, and the parameter totals, as torchinfo's summary lists them.",
      examples=("torch nn summary $(torch nn sequential 'linear 4 8' relu 'linear 8 1') --input_shape 2,4",),
      read_only=True)
def summary(ctx, model, input_shape, dtype=None, depth=3):
    """Run zeros of --input_shape (--dtype, else the model's) through the model in eval mode without grad
    (its mode restored) and list every module call as torchinfo's summary does, --depth levels deep (3):
    kind and depth-idx, output shape, Param # ("--" none; a container's own, its children's shown below;
    a leaf's or last shown level's all; "(N)" all frozen; "(recursive)" a module called again), then Total,
    Trainable and Non-trainable params and Total mult-adds, counted as torchinfo does. --json: layers
    [{name, kind, depth, index, output_shape, parameters, trainable, recursive}] and the totals.
    """
    return summarize(model, input_shape, dtype, depth)
