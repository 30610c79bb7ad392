"""Fill op-table rows from PyTorch's own registry: ATen schemas first, Python signatures second.

For each public function of torch, torch.linalg, torch.fft, torch.special and
torch.nn.functional: a Python-level function with a complete signature is typed by it (F.mse_loss,
torch.split: that is what the call binds to); a builtin is typed by the non-mutating overloads of
the ATen operator of its name (`linalg_qr` for torch.linalg.qr), and *args wrappers (einsum) by
ATen too. Nothing here knows a single op by name: exclusions.py and aliases.py hold the few names
that need a word; cache.py keeps the result per torch version.
"""
import inspect
import re

import torch

from torchsh.table import aliases, categories, docargs, exclusions, readonly
from torchsh.table.annotations import annotated_kind, annotation_text, default_kind
from torchsh.table.spec import MISSING, ArgSpec, OpSpec, Overload, UnsupportedType, parse_schema
from torchsh.table.kinds import TENSOR_KINDS

# (prefix users type, Python module, ATen name prefix)
NAMESPACES = (
    ("", torch, ""),
    ("linalg.", torch.linalg, "linalg_"),
    ("fft.", torch.fft, "fft_"),
    ("special.", torch.special, "special_"),
    ("nn.functional.", torch.nn.functional, None),
)
_FACTORY_MARK = "pin_memory"  # ATen factories take TensorOptions; Python adds requires_grad to exactly those


def torch_ops():
    """An OpSpec for every public function PyTorch offers in the namespaces above, plus the few
    Tensor methods aliases.TENSOR_METHODS names (`repeat`, `expand`: no torch.* function exists)."""
    schemas = _schemas_by_name()
    unsafe = readonly.unsafe_names(schemas)
    rows = []
    for prefix, module, aten_prefix in NAMESPACES:
        for attr in sorted(dir(module)):
            fn = getattr(module, attr, None)
            if not exclusions.is_candidate(prefix, attr, fn):
                continue
            aten = schemas.get(aten_prefix + attr) if aten_prefix is not None else None
            if aten is None and prefix == "nn.functional." and inspect.isbuiltin(fn):
                aten = schemas.get(fn.__name__)  # F.logsigmoid is the builtin aten::log_sigmoid
            rows.append(_row(prefix + attr, attr, fn, aten, _overloads(fn, aten), unsafe))
    for attr in aliases.TENSOR_METHODS:
        fn, aten = getattr(torch.Tensor, attr, None), schemas.get(attr)
        if fn is not None and aten and attr not in {r.name for r in rows if r}:
            rows.append(_row(attr, attr, fn, aten, _from_schemas(aten), unsafe))
    return categories.with_alias_categories([r for r in rows if r])


def tensor_properties():
    """One row per aliases.TENSOR_PROPERTIES (`torch T $x` is x.T): a tensor in, the property out.
    Built on every start (not cached: a property is no function the cache can name)."""
    rows = []
    for attr in aliases.TENSOR_PROPERTIES:
        descriptor = getattr(torch.Tensor, attr, None)
        if descriptor is None:
            continue
        doc = first_paragraph(descriptor)
        arg = ArgSpec("input", "tensor", type_text="Tensor")
        rows.append(OpSpec(name=attr, category="shape", summary=summary_line(doc), call=_property(attr), doc=doc,
                           overloads=[Overload(args=(arg,), returns="Tensor")], read_only=True))
    return rows


def _property(attr):
    def get(input):
        return getattr(input, attr)
    get.__name__ = attr
    return get


_CAST_DOC = re.compile(r"``self\.(\w+)\(\)`` is equivalent to ``self\.to\(torch\.(\w+)\)``")


def cast_aliases(known_dtypes):
    """{method: ("to", {"dtype": name})} for each Tensor method whose docstring says
    "``self.float()`` is equivalent to ``self.to(torch.float32)``" (float, double, half, long, int, bool…),
    for the dtypes the shell can name."""
    out = {}
    for attr in dir(torch.Tensor):
        m = _CAST_DOC.search(getattr(getattr(torch.Tensor, attr, None), "__doc__", None) or "")
        if m and m.group(1) == attr and m.group(2) in known_dtypes:
            out[attr] = ("to", {"dtype": m.group(2)})
    return out


def _row(name, attr, fn, aten, overloads, unsafe):
    if not overloads:
        return None
    factory = any(a.name == _FACTORY_MARK for ov in overloads for a in ov.args)
    if factory:
        overloads = [_with_requires_grad(ov) for ov in overloads]
    doc = first_paragraph(fn)
    return OpSpec(name=name, category=categories.category_of(name, attr, aten or [], doc),
                  summary=summary_line(doc), overloads=overloads, call=fn, doc=doc, factory=factory,
                  arg_docs=_arg_docs(fn, overloads), read_only=readonly.is_read_only(attr, fn, aten, unsafe))


def _arg_docs(fn, overloads):
    """PyTorch's descriptions of the arguments; ATen's `self` is the docs' `input` already (spec.py)."""
    return docargs.arg_docs(_dispatch_target(fn), overloads) or docargs.arg_docs(fn, overloads)


def _overloads(fn, aten):
    """A Python function's own complete signature wins (torch.split's int-or-list
    split_size_or_sections, tensordot's dims): it is what the call binds to. Builtins and
    *args wrappers (einsum, atleast_1d, unique_consecutive) are typed by ATen's overloads."""
    typed_by = _dispatch_target(fn)
    if inspect.isfunction(typed_by) and not _has_varargs(typed_by):
        own = _from_signature(typed_by)
        if own:
            return own
    if aten:
        overloads = _from_schemas(aten)
        if overloads and inspect.isfunction(fn):  # `broadcast_tensors(*tensors)`: splat Tensor[]
            overloads = [_splat_tensor_lists(ov) for ov in overloads]
        if overloads:
            return overloads
    return _from_signature(fn)


def _dispatch_target(fn):
    """F.max_pool2d and torch.unique are boolean_dispatch(*args, **kwargs) wrappers: their
    `if_false` function carries the real signature (return_indices/return_inverse included)."""
    code, closure = getattr(fn, "__code__", None), getattr(fn, "__closure__", None) or ()
    cells = dict(zip(getattr(code, "co_freevars", ()), closure))
    if "if_false" in cells and "arg_name" in cells:
        return _dispatch_target(cells["if_false"].cell_contents)  # torch.unique nests two
    return fn


def _splat_tensor_lists(ov):
    args = tuple(ArgSpec(a.name, a.kind, a.default, a.optional, a.keyword_only, "*Tensor")
                 if a.kind == "tensors" and not a.optional else a for a in ov.args)
    return Overload(args=args, returns=ov.returns, name=ov.name)


def _has_varargs(fn):
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params)


def _schemas_by_name():
    out = {}
    for s in torch._C._jit_get_all_schemas():
        if s.name.startswith("aten::"):
            out.setdefault(s.name[6:], []).append(s)
    return out


def _from_schemas(schemas):
    """Overloads a shell can call: no out=/in-place (mutable) args, no Dimname, Tensor-related."""
    overloads, seen = [], set()
    for s in schemas:
        try:
            _, name, args, returns = parse_schema(str(s))
        except (UnsupportedType, ValueError):
            continue
        if not any(a.kind in TENSOR_KINDS for a in args) and "Tensor" not in returns:
            continue  # TorchScript's int/float/str/list helpers (aten::add.int…)
        args = tuple(a for a in args if a.kind != "generator")
        key = tuple((a.name, a.kind) for a in args)
        if key in seen:
            continue
        seen.add(key)
        overloads.append(Overload(args=args, returns=returns, name=name))
    return overloads


def _with_requires_grad(ov):
    if any(a.name == "requires_grad" for a in ov.args):
        return ov
    extra = ArgSpec("requires_grad", "bool", default=False, keyword_only=True, type_text="bool")
    return Overload(args=ov.args + (extra,), returns=ov.returns, name=ov.name)


# -- Python signatures -------------------------------------------------------------------------
# out=/inplace= are the variants the shell leaves out; size_average/reduce are PyTorch's deprecated
# spellings of reduction=; a Generator cannot be named from a shell (use `torch manual_seed`)
_SKIPPED_PARAMS = ("out", "inplace", "generator", "size_average", "reduce")


def _from_signature(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    args = []
    for p in sig.parameters.values():
        if p.kind == p.VAR_KEYWORD or p.name in _SKIPPED_PARAMS or (p.name[0] == "_" and p.default is not p.empty):
            continue
        if p.kind == p.VAR_POSITIONAL:
            if p.name not in ("tensors", "matrices", "operands"):
                return []  # torch.broadcast_shapes(*shapes): not tensors, and nothing to type it by
            args.append(ArgSpec(p.name, "tensors", type_text="*Tensor"))
            continue
        kind, type_text = _kind_of(p)
        if kind is None:
            return []  # a parameter we cannot type: leave the function out rather than guess
        default = MISSING if p.default is p.empty else p.default
        args.append(ArgSpec(p.name, kind, default=default, optional=p.default is None,
                            keyword_only=p.kind == p.KEYWORD_ONLY, type_text=type_text))
    ret = sig.return_annotation
    returns = "" if ret is sig.empty else _annotation_text(ret)
    return [Overload(args=tuple(args), returns=returns)]


def _annotation_text(ann):
    """An annotation as a function's help shows it: PyTorch's own words, without `torch.`."""
    return annotation_text(ann).replace("torch.", "")


_TENSOR_NAMES = ("input", "tensor", "target", "x", "x1", "x2", "a", "b", "A", "B", "weight")


def _kind_of(p):
    """(kind, type text) for a function's parameter (table/annotations.py), or (None, None): nothing types it."""
    if p.name in ("dtype", "out_dtype"):  # TorchScript spells the dtype type `int` (F.softmax)
        return "dtype", "ScalarType" + ("?" if p.default is None else "")
    text = _annotation_text(p.annotation) if p.annotation is not p.empty else ""
    found = annotated_kind(text) if text else None
    if found and text == "None":  # no annotation left to show: the row's type
        return found[0], found[1] + ("?" if p.default is None else "")
    if found:
        return found[0], text
    d = p.default
    if isinstance(d, int) and not isinstance(d, bool):
        return "json", "Any"  # untyped with an int default: tensordot's dims is an int or a list of lists
    kind = default_kind(d)
    if kind or d is None:
        return (kind, kind) if kind else ("json", "Any")
    if p.default is p.empty and p.name in _TENSOR_NAMES:
        return "tensor", "Tensor"
    return None, None


# -- docstrings ---------------------------------------------------------------------------------
def first_paragraph(fn):
    """The first prose paragraph of PyTorch's docstring (skipping the signature line)."""
    doc = inspect.getdoc(fn) or ""
    paras = [p.strip() for p in doc.split("\n\n") if p.strip()]
    for p in paras:
        p = _drop_signature(p)
        if not p:
            continue
        text = re.sub(r":(attr|func|class|meth|ref|math):`~?([^`<]*?)(\s*<[^>]*>)?`", r"\2", p)
        text = text.replace("``", "").replace("`", "")
        return " ".join(text.split())
    return ""


def _drop_signature(paragraph):
    """`arctan2(input, other, *, out=None) -> Tensor` (maybe wrapped) and the rest of its line."""
    if not re.match(r"^[\w.]+\(", paragraph):
        return paragraph
    depth = 0
    for i, ch in enumerate(paragraph):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == ")" and depth == 0:
            rest = paragraph[i + 1:]
            return rest.split("\n", 1)[1].strip() if "\n" in rest else ""
    return paragraph


def summary_line(doc):
    first = doc.split(". ")[0].strip()
    return (first if first.endswith(".") else first + ".") if first else ""
