"""Probability distributions from the shell: `torch dist KIND --param value…` for every
torch.distributions class, and `dist sample|rsample|log_prob|entropy|mean|variance|cdf|icdf|kl|list`.

One op-table row per distribution class (`dist.normal`, `dist.bernoulli`, `dist.multivariate_normal`,
…), typed from the class's signature and its arg_constraints, as `nn` rows are from layer classes.
A parameter takes a tensor handle, a number or a JSON list: numbers reach PyTorch as Python numbers
(`Normal(0, 1)` in Python: float32 parameters), lists as float tensors of the default dtype.
Left out: Distribution and ExponentialFamily (bases) and TransformedDistribution (its transforms are
Python objects a shell word cannot name); its subclasses (log_normal, gumbel, half_normal…) are in.
"""
import inspect

import torch
import torch.distributions as D

from torchsh.errors import TorchshError, bad_argument
from torchsh.results import Table
from torchsh.table import classes, docargs
from torchsh.table.from_torch import first_paragraph, summary_line
from torchsh.table.signature import kind_of, snake_case
from torchsh.table.spec import MISSING, ArgSpec, OpSpec, Overload
from torchsh.verbs import verb

NOT_BUILDABLE = {"Distribution", "ExponentialFamily", "TransformedDistribution"}
VERB_WORDS = {"sample", "rsample", "log_prob", "entropy", "mean", "variance", "cdf", "icdf", "kl", "list"}
PARAM_TYPE = "Tensor|number"     # how help shows a distribution parameter


def distributions():
    """snake_case word -> torch.distributions class, every buildable one."""
    out = {}
    for name in dir(D):
        cls = getattr(D, name)
        if inspect.isclass(cls) and issubclass(cls, D.Distribution) and name not in NOT_BUILDABLE:
            out[snake_case(name)] = cls
    return dict(sorted(out.items()))


# why `torch history --python` refuses a distribution, and what was computed from one (its tensors are written
# as their values while the daemon holds them unchanged: forms.lines)
NOT_WRITTEN = "torch.distributions are not written yet"


def generated_rows():
    rows = []
    for word, cls in distributions().items():
        args = dist_args(cls)
        doc = first_paragraph(cls)
        rows.append(DistOpSpec(
            name="dist." + word, category="random", summary=summary_line(doc) or "torch.distributions." + cls.__name__,
            overloads=[Overload(args=args, returns="Distribution")], call=_builder(cls, args), verb=True, doc=doc,
            aliases=(cls.__name__,), arg_docs=docargs.arg_docs(cls, [Overload(args=args)]),
            cls=cls, class_kind="dist", words_only=True, word_aliases=("dist." + cls.__name__,),
            no_form=NOT_WRITTEN))
    return rows


class DistOpSpec(OpSpec):
    """A distribution's row: usage names its parameters (`dist normal LOC SCALE`), not their kind (JSON)."""

    def usage_line(self, overload=None):
        text = super().usage_line(overload)
        for a in (overload or self.overloads[0]).args:
            if a.kind == "json":
                text = text.replace("JSON", a.name.upper(), 1)
        return text


def dist_args(cls):
    """ArgSpecs of cls(...): tensor parameters take JSON words (numbers, lists) or handles."""
    constrained = _constrained(cls)
    args = []
    for p in inspect.signature(cls.__init__).parameters.values():
        if p.name == "self" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        default = MISSING if p.default is p.empty else p.default
        text = str(p.annotation)
        if p.name == "validate_args":
            kind, type_text = "bool", "bool?"
        elif "distribution" in text.lower() or text == "~D":
            kind, type_text = "distribution", "Distribution"
        elif p.name in constrained or "Tensor" in text or p.annotation is p.empty:
            kind, type_text = "json", PARAM_TYPE
        else:
            kind, type_text = kind_of(p)
            default = list(default) if isinstance(default, tuple) else default
        args.append(ArgSpec(p.name, kind, default=default, optional=default is None, type_text=type_text,
                            keyword_only=p.name == "validate_args"))
    return tuple(args)


def _constrained(cls):
    """The names in the class's arg_constraints dict. Uniform and Wishart compute it in a property, which
    needs an instance: for them every parameter counts (their parameters are all tensors or numbers)."""
    found = inspect.getattr_static(cls, "arg_constraints", {})
    return set(found) if isinstance(found, dict) else set(inspect.signature(cls.__init__).parameters)


def _builder(cls, args):
    kinds = {a.name: a.kind for a in args}

    def build(ctx, **values):
        given = {k: (_param(cls, k, v) if kinds[k] == "json" else v) for k, v in values.items()}
        if given.get("validate_args", None) is None and "validate_args" in kinds:
            # PyTorch's default (Distribution's class value, __debug__), not the process-wide switch: the
            # first torch.compile or torch.export in the daemon turns that off for good (torch._dynamo's
            # TorchPatcher.patch), and `torch dist normal 0 -1` must stay refused after a `fit --compile`
            given["validate_args"] = __debug__
        try:
            return cls(**given)
        except (ValueError, TypeError) as e:
            raise bad_argument("%s: %s" % (cls.__name__, str(e).split("\n")[0][:300]),
                               "`torch dist %s --help` shows its parameters" % snake_case(cls.__name__)) from None
        except AttributeError:  # a number where the class calls tensor methods (Categorical(logits=5))
            numbers = [k for k, v in given.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
            raise bad_argument("%s takes a tensor for %s, not a number" % (cls.__name__, " or ".join(numbers) or "it"),
                               "give a list ('[0.2,0.8]') or a tensor handle") from None
    build.__name__ = "dist_" + cls.__name__
    return build


def _param(cls, name, value):
    """A parameter word as PyTorch takes it: tensors and numbers as they are, lists as float tensors."""
    if value is None or isinstance(value, (torch.Tensor, bool, int, float)):
        return value
    if isinstance(value, list):
        try:
            return torch.tensor(value, dtype=torch.get_default_dtype())
        except (TypeError, ValueError, RuntimeError) as e:
            raise bad_argument("--%s: %s" % (name, str(e).split("\n")[0][:200]), "write a list of numbers, e.g. '[0.2,0.8]'") from None
    what = "a %s" % type(value).__name__ if not isinstance(value, str) else repr(value[:40])
    raise bad_argument("--%s of %s: %s is not a number, list or tensor handle" % (name, cls.__name__, what),
                       "e.g. --%s 0.5, --%s '[0.5,1.5]' or --%s $t" % (name, name, name))


# -- using a distribution -----------------------------------------------------------------------------
def _ask(distribution, what, *args):
    """distribution.what(*args); NotImplementedError (no cdf for this kind…) becomes one torch_error line."""
    try:
        found = getattr(distribution, what)
        return found(*args) if callable(found) else found
    except NotImplementedError:
        raise TorchshError("torch_error", "%s has no %s in PyTorch" % (type(distribution).__name__, what),
                           "torch.distributions.%s does not implement it" % type(distribution).__name__) from None


@verb("dist.sample(Distribution distribution, int[] sample_shape=[]) -> Tensor", category="random",
      no_form=NOT_WRITTEN,
      examples=("torch manual_seed 0 && torch value $(torch dist sample $(torch dist normal 0 1) 3)",))
def sample(ctx, distribution, sample_shape=()):
    """distribution.sample(sample_shape): draws without a graph, sample_shape + batch_shape + event_shape."""
    return _ask(distribution, "sample", _size(sample_shape))


@verb("dist.rsample(Distribution distribution, int[] sample_shape=[]) -> Tensor", category="random",
      no_form=NOT_WRITTEN,
      examples=("torch dist rsample $(torch dist normal 0 1) 3",))
def rsample(ctx, distribution, sample_shape=()):
    """distribution.rsample(sample_shape): reparameterized draws, differentiable in the parameters."""
    return _ask(distribution, "rsample", _size(sample_shape))


def _size(shape):
    return torch.Size([shape] if isinstance(shape, int) else shape)  # `dist sample D 5`: five draws


@verb("dist.log_prob(Distribution distribution, Tensor value) -> Tensor", category="random", no_form=NOT_WRITTEN,
      examples=("torch value $(torch dist log_prob $(torch dist normal 0 1) 0.5)",), read_only=True)
def log_prob(ctx, distribution, value):
    """distribution.log_prob(value): the log density (or log mass) at value."""
    return _ask(distribution, "log_prob", value)


@verb("dist.cdf(Distribution distribution, Tensor value) -> Tensor", category="random", no_form=NOT_WRITTEN,
      examples=("torch value $(torch dist cdf $(torch dist normal 0 1) 0.0)",), read_only=True)
def cdf(ctx, distribution, value):
    """distribution.cdf(value): the cumulative distribution function at value."""
    return _ask(distribution, "cdf", value)


@verb("dist.icdf(Distribution distribution, Tensor value) -> Tensor", category="random", no_form=NOT_WRITTEN,
      examples=("torch value $(torch dist icdf $(torch dist normal 0 1) 0.975)",), read_only=True)
def icdf(ctx, distribution, value):
    """distribution.icdf(value): the inverse cumulative distribution function at a probability."""
    return _ask(distribution, "icdf", value)


@verb("dist.entropy(Distribution distribution) -> Tensor", category="random", no_form=NOT_WRITTEN,
      examples=("torch value $(torch dist entropy $(torch dist bernoulli --probs 0.3))",), read_only=True)
def entropy(ctx, distribution):
    """distribution.entropy(), one value per batch element."""
    return _ask(distribution, "entropy")


@verb("dist.mean(Distribution distribution) -> Tensor", category="random", no_form=NOT_WRITTEN,
      examples=("torch value $(torch dist mean $(torch dist gamma 2 0.5))",), read_only=True)
def mean(ctx, distribution):
    """distribution.mean."""
    return _ask(distribution, "mean")


@verb("dist.variance(Distribution distribution) -> Tensor", category="random", no_form=NOT_WRITTEN,
      examples=("torch value $(torch dist variance $(torch dist gamma 2 0.5))",), read_only=True)
def variance(ctx, distribution):
    """distribution.variance."""
    return _ask(distribution, "variance")


@verb("dist.kl(Distribution p, Distribution q) -> Tensor", category="random", no_form=NOT_WRITTEN,
      examples=("torch value $(torch dist kl $(torch dist normal 0 1) $(torch dist normal 1 2))",), read_only=True)
def kl(ctx, p, q):
    """torch.distributions.kl_divergence(p, q): KL(p ‖ q), for the pairs PyTorch registers."""
    try:
        return D.kl_divergence(p, q)
    except NotImplementedError:
        raise TorchshError("torch_error", "PyTorch has no KL divergence from %s to %s" % (
            type(p).__name__, type(q).__name__), "torch.distributions.kl registers the pairs it knows") from None


@verb("dist.list() -> Json", category="random", lockfree=True, examples=("torch dist list",), read_only=True)
def dist_list(ctx):
    """Every distribution kind `torch dist KIND` builds, with its parameters."""
    rows = [{"kind": op.name[5:], "class": op.cls.__name__, "parameters": op.overloads[0].params_text()}
            for op in classes.built_by(ctx.table, "random", "dist")]
    return Table(rows, ("kind", "parameters"))
