"""Which PyTorch ops are read-only (OpSpec.read_only): they change no object, file, setting or generator.

The table holds no in-place or out= variant (spec.parse_schema drops mutable arguments), so a PyTorch op's
output is a new object and nothing existing changes, unless it draws from the generator: ATen says so with
torch.Tag.nondeterministic_seeded (randn, dropout, bernoulli) or a `Generator?` argument (rrelu, poisson).
A Python-level function (F.dropout2d, F.gumbel_softmax) draws when a name it calls does. The few ops ATen
marks neither way, or whose schema hides a write, are named below with why.
"""
import inspect

import torch

# ATen ops that draw from the generator though neither the tag nor a Generator argument says so (2.13)
DRAWS_UNMARKED = ("feature_dropout", "feature_alpha_dropout", "scaled_dot_product_attention")
# Ops that change a tensor they are given though their schema marks none mutable: batch norm's running
# statistics (training=True), instance norm's (use_input_stats=True), embedding's weight (max_norm renorms it)
WRITES_UNMARKED = ("batch_norm", "instance_norm", "embedding")


def unsafe_names(schemas):
    """The ATen names (no `aten::`) of ops that draw from the generator or write an input, from
    {name: [FunctionSchema]}: computed once per table build."""
    names = set(DRAWS_UNMARKED) | set(WRITES_UNMARKED)
    for name, overloads in schemas.items():
        if any("Generator" in str(a.type) for s in overloads for a in s.arguments):
            names.add(name)
    for name in schemas:
        packet = getattr(torch.ops.aten, name, None)
        if packet is not None and _tagged(packet):
            names.add(name)
    return frozenset(names)


def _tagged(packet):
    for overload in packet.overloads():
        try:
            if torch.Tag.nondeterministic_seeded in getattr(packet, overload).tags:
                return True
        except (AttributeError, RuntimeError):
            continue
    return False


def is_read_only(attr, fn, aten, unsafe):
    """Whether the row for torch's `attr` (the callable fn, its ATen schemas or None) is read-only, given
    unsafe_names()."""
    names = {attr, getattr(fn, "__name__", attr)}
    names.update(s.name[6:] for s in aten or ())
    names.update(_called(fn))
    return not any(n in unsafe or n.rstrip("_") in unsafe for n in names)


def _called(fn):
    """The names a Python-level function's own code refers to (`_VF.feature_dropout`: feature_dropout),
    with those of the function it dispatches to (F.max_pool2d's boolean_dispatch)."""
    out = set()
    for f in (fn, *_dispatch_targets(fn)):
        code = getattr(f, "__code__", None)
        if code is not None and inspect.isfunction(f):
            out.update(code.co_names)
    return out


def _dispatch_targets(fn):
    code, closure = getattr(fn, "__code__", None), getattr(fn, "__closure__", None) or ()
    cells = dict(zip(getattr(code, "co_freevars", ()), closure))
    return [c.cell_contents for k, c in cells.items() if k in ("if_true", "if_false") and callable(c.cell_contents)]
