"""Fill op-table rows from PyTorch's own registry: ATen schemas first, Python signatures second.

For each public function of torch, torch.linalg, torch.fft, torch.special and
torch.nn.functional: if ATen has an operator of that name (`linalg_qr` for torch.linalg.qr),
its non-mutating overloads type the arguments; otherwise the Python signature and annotations do
(F.mse_loss, torch.split). Nothing here knows a single op by name: exclusions.py and aliases.py
hold the few names that need a word.
"""
import inspect
import re

import torch

from torchsh.table import categories, exclusions
from torchsh.table.spec import MISSING, ArgSpec, OpSpec, Overload, UnsupportedType, parse_schema

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
    """Yield an OpSpec for every public function PyTorch offers in the namespaces above."""
    schemas = _schemas_by_name()
    for prefix, module, aten_prefix in NAMESPACES:
        for attr in sorted(dir(module)):
            fn = getattr(module, attr, None)
            if not exclusions.is_candidate(prefix, attr, fn):
                continue
            name = prefix + attr
            overloads = []
            aten = schemas.get(aten_prefix + attr) if aten_prefix is not None else None
            if aten is None and prefix == "nn.functional.":
                aten = schemas.get(attr) if inspect.isbuiltin(fn) else None
            if aten:
                overloads = _from_schemas(aten)
            if not overloads:
                overloads = _from_signature(fn)
            if not overloads:
                continue
            factory = any(a.name == _FACTORY_MARK for ov in overloads for a in ov.args)
            if factory:
                overloads = [_with_requires_grad(ov) for ov in overloads]
            doc = first_paragraph(fn)
            yield OpSpec(name=name, category=categories.category_of(name, attr, aten or [], doc),
                         summary=summary_line(doc), overloads=overloads, call=fn, doc=doc, factory=factory)


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
        if not any(a.kind in ("tensor", "tensors") for a in args) and "Tensor" not in returns:
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
_ANNOTATION_KINDS = (  # (regex on the annotation's text, kind); first match wins
    (r"list\[Tensor\]|tuple\[Tensor, \.\.\.\]|List\[Tensor\]|Sequence\[Tensor\]", "tensors"),
    (r"^(torch\.)?Tensor$|Tensor \| None|Optional\[Tensor\]", "tensor"),
    (r"^int \| list\[int\]|^int \| tuple|^(list|tuple|List|Tuple)\[int|Sequence\[int\]|_size|BroadcastingList", "int_list"),
    (r"^(list|tuple|List|Tuple)\[float", "float_list"),
    (r"^bool", "bool"),
    (r"^int", "int"),
    (r"^float", "float"),
    (r"^str", "str"),
    (r"dtype", "dtype"),
    (r"device", "device"),
)


def _from_signature(fn):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    args = []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_KEYWORD,) or p.name in ("out", "inplace", "generator", "_stacklevel"):
            continue
        if p.kind == p.VAR_POSITIONAL:
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
    text = ann if isinstance(ann, str) else getattr(ann, "__name__", None) or str(ann)
    return str(text).replace("torch.", "").replace("typing.", "")


def _kind_of(p):
    if p.annotation is not p.empty:
        text = _annotation_text(p.annotation)
        for pattern, kind in _ANNOTATION_KINDS:
            if re.search(pattern, text):
                return kind, text
    d = p.default
    if isinstance(d, bool):
        return "bool", "bool"
    if isinstance(d, int):
        return "int", "int"
    if isinstance(d, float):
        return "float", "float"
    if isinstance(d, str):
        return "str", "str"
    if d is None:
        return "json", "Any"
    if p.default is p.empty and p.name in ("input", "tensor", "target", "x", "x1", "x2", "A", "B", "weight"):
        return "tensor", "Tensor"
    return None, None


# -- docstrings ---------------------------------------------------------------------------------
def first_paragraph(fn):
    """The first prose paragraph of PyTorch's docstring (skipping the signature line)."""
    doc = inspect.getdoc(fn) or ""
    paras = [p.strip() for p in doc.split("\n\n") if p.strip()]
    for p in paras:
        if re.match(r"^[\w.]+\(.*\)(\s*->.*)?$", p.replace("\n", " ")):
            continue
        text = re.sub(r":(attr|func|class|meth|ref|math):`~?([^`<]*?)(\s*<[^>]*>)?`", r"\2", p)
        text = text.replace("``", "").replace("`", "")
        return " ".join(text.split())
    return ""


def summary_line(doc):
    first = doc.split(". ")[0].strip()
    return (first if first.endswith(".") else first + ".") if first else ""
