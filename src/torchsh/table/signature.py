"""A PyTorch class's constructor signature -> op-table arguments (ArgSpec), for generated rows.

`torch nn linear 1 1 --bias false`, `torch optim adam $m --betas 0.9,0.999` and
`torch sched cosine $opt --T_max 100` are typed from `inspect.signature(cls.__init__)`: the
annotation (or, without one, the default's type) picks the argument kind (table/annotations.py).
Unions the shell cannot narrow (`int | tuple[int, int] | str` for padding) become `json`: any word,
read as JSON when it looks like JSON (`3`, `'[3,3]'`, `same`). Arguments that make no sense from a
shell (callables, deprecated `size_average`/`reduce`, `inplace`) are left out, each for a reason below.
"""
import inspect
import re

from torchsh.table.annotations import NAMED_KINDS, annotated_kind, annotation_text, default_kind
from torchsh.table.spec import MISSING, ArgSpec, OpSpec

# Never offered as flags: deprecated by PyTorch, Python-only (callables, process groups), or
# in-place layers (the shell works on values: an in-place ReLU would overwrite the caller's tensor).
SKIPPED = {"self", "size_average", "reduce", "inplace", "process_group", "distance_function", "scale_fn",
           "lr_lambda", "_stacklevel"}

def class_args(cls, drop=(), signature_of=None):
    """ArgSpecs for cls(...), in signature order; `drop` names arguments a verb fills itself."""
    sig = inspect.signature((signature_of or cls).__init__)
    args = []
    for p in sig.parameters.values():
        if p.name in SKIPPED or p.name in drop or p.name.startswith("_") or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        kind, type_text = kind_of(p)
        default = MISSING if p.default is p.empty else _shell_default(p.default)
        args.append(ArgSpec(p.name, kind, default=default, optional=p.default is None,
                            keyword_only=p.kind == p.KEYWORD_ONLY, type_text=type_text))
    return tuple(args)


def fit_values(args, values):
    """Wrap a lone number given for a list-only argument (`--milestones 5` -> [5]); unions keep it."""
    for a in args:
        v = values.get(a.name)
        if a.type_text == "int[]" and isinstance(v, int) and not isinstance(v, bool):
            values[a.name] = [v]
    return values


def kind_of(p):
    """(kind, type text) for one constructor parameter: its name or annotation first (table/annotations.py), then
    its default's type; a union no row types is `json`, shown as its annotation."""
    if p.name in NAMED_KINDS:
        return NAMED_KINDS[p.name]
    if p.annotation is not p.empty:
        text = annotation_text(p.annotation)
        return annotated_kind(text) or ("json", text)
    kind = default_kind(p.default)
    return (kind, kind) if kind else ("json", "Any")


def _shell_default(value):
    """A default as the shell shows it: functions by name, tuples as lists."""
    if callable(value) and hasattr(value, "__name__"):
        return value.__name__
    if isinstance(value, tuple):
        return list(value)
    return value


def snake_case(name):
    """Class name -> the snake_case word users type: Conv2d -> conv2d, LeakyReLU -> leaky_relu, MSELoss -> mse_loss."""
    for word in ("PReLU", "RReLU", "ReLU", "SiLU"):
        name = name.replace(word, word[0] + word[1:].lower())
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return name.lower()


class WordsOpSpec(OpSpec):
    """A row whose positional Argv takes words (`'linear 2 8' relu`, `"$head lr=0.1"`), not a command
    after `--`: its usage shows words_metavar (e.g. LAYER…) instead of `-- CMD ARGS…`."""

    def usage_line(self, overload=None):
        return super().usage_line(overload).replace("-- CMD ARGS…", (self.words_metavar or "WORD") + "…")
