"""`torch history --python`: the log as a plain PyTorch script (`import torch`, no torchsh).

Each kept entry is written as the PyTorch it ran (forms.py), its outputs named after their handles
(`t17 = torch.matmul(t3, t9)`); identical requests in a row that make nothing become one `for _ in range(N):`.
Randomness: before the first kept entry that drew from the generator since the script last matched the
daemon's, `torch.manual_seed(S)` when the session's seed leads there exactly, else the generator state the
daemon had, embedded. Tensors the history cannot rebuild (literals, what came from stdin) are literals when
small and go to a sidecar .safetensors file when large. The script ends with the sha256 of each kept object
whose every change it replays (digest.py): `python s.py --check` recomputes them and exits 1 on a difference.
"""
import base64
import builtins
import hashlib
import inspect
import keyword
import math
import re

import torch

from torchsh import __version__
from torchsh.history import checks, datasets, digest, files, forms, lmforms, loops, slice as slicing
from torchsh.history.values import handles_in
from torchsh.quoting import python_comment, python_name, python_string
from torchsh.registry.handles import parse_handle

LITERAL_MAX = 64  # elements of a tensor written as a literal; a larger one goes to the sidecar
_PREFIX = {"tensor": "t", "nn": "m", "optim": "o", "sched": "s"}

_HELPERS = {
    "_flat": '''def _flat(out):
    """A tensor, or the tensors of nested tuples in order (what `torch forward` prints)."""
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for x in out for t in _flat(x)] if isinstance(out, (tuple, list)) else []
''',
    "_sidecar": '''def _sidecar(name, _cache={}):
    """A tensor from the .safetensors file beside this script."""
    if not _cache:
        import os
        _cache.update(_safetensors(os.path.join(os.path.dirname(os.path.abspath(__file__)), SIDECAR)))
    return _cache[name].clone()
''',
    **files.HELPERS,
    **lmforms.HELPERS,
    "_Loader": datasets.LOADER,
}
_ST_DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16", torch.bfloat16: "BF16",
              torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
              torch.bool: "BOOL"}


def variable(handle, epochs, named=None):
    """The object's name as an identifier when it has one (`@exp1/enc` -> exp1_enc, named_variables), else t17
    for tensor://k3f0000h (its serial, in decimal), with the epoch when the log spans daemons."""
    if named and handle in named:
        return named[handle]
    kind, epoch, serial = parse_handle(handle)
    base = "%s%d" % (_PREFIX.get(kind, "x"), int(serial, 36))
    return base if len(epochs) <= 1 else "%s_%s" % (base, epoch)


# What a name's identifier must not shadow: Python's keywords and builtins (`range` drives the loops) and
# the script's own top-level names (its helpers all start with "_", which a name's identifier never does)
_TAKEN = frozenset(keyword.kwlist) | frozenset(dir(builtins)) | {"torch", "sys", "base64", "numpy", "SIDECAR", "digest"}
_DERIVED = re.compile(r"^[tmosx]\d+(_[0-9a-z]+)?$")  # what variable() derives (t17, m3_k3f): never a name's


def named_variables(registry):
    """{handle: identifier} for the objects named now (`@exp1/enc` -> exp1_enc); a name whose identifier is
    taken (_TAKEN), has a derived variable's form, starts with "_" or a digit, or is another name's is left out."""
    wanted = {}
    for name, entry in (registry.names.matching() if registry is not None else ()):
        wanted.setdefault(re.sub(r"\W", "_", name), set()).add(entry.handle)
    return {handles.pop(): ident for ident, handles in wanted.items()
            if len(handles) == 1 and ident.isidentifier() and ident[0] != "_" and ident not in _TAKEN
            and not _DERIVED.match(ident)}


class Writer:
    """Renders entries as script lines: forms.py calls back for names, literals and parameter lists."""

    def __init__(self, entries, registry=None, table=None):
        self.epochs = {parse_handle(h)[1] for e in entries for h in e.outputs}
        self.sidecar = {}  # key -> tensor, for the sidecar file
        self.helpers = set()
        self.registry, self.table = registry, table
        # what a request changed in place (Entry.writes): such a tensor's value now may not be the one it was made with
        self.changed = {h for e in entries for h in handles_in(list(e.writes))}

    def row(self, name):
        """The table's row named name (its form, its reason for none: forms.lines), or None without a table."""
        return self.table.ops.get(name) if self.table is not None else None

    def held_values(self, e):
        """[(handle, tensor)] of an entry's outputs when each is a tensor still held and never changed in
        place since (no gradient either), else None."""
        out = []
        for h in e.outputs:
            entry = _held(self.registry, h) if self.registry is not None else None
            t = entry.obj if entry is not None and entry.kind == "tensor" else None
            if t is None or h in self.changed or t.grad is not None or (t.requires_grad and not t.is_leaf):
                return None
            out.append((h, t.detach()))
        return out or None

    def v(self, handle):
        return loops.placeholder(handle)  # named at the end, once loops have renamed their last pass's

    def outs(self, e):
        if len(e.outputs) > 1 and e.op in ("forward", "predict"):
            self.helpers.add("_flat")
        return ", ".join(self.v(h) for h in e.outputs) or "_"

    def lit(self, x):
        if isinstance(x, tuple) and x:
            tag = x[0]
            if tag == "h":
                return self.v(x[1])
            if tag == "t":
                return self.tensor_literal(x[1])
            if tag == "dtype":
                return "torch." + self.name(x[1])
            if tag == "device":
                return "torch.device(%s)" % python_string(x[1])
            if tag == "ctor":
                return self._constructor(x[1], x[2])
            raise forms.refuse("an argument", "%s has no literal form" % x[1])
        if isinstance(x, list):
            return "[%s]" % ", ".join(self.lit(i) for i in x)
        if isinstance(x, dict):
            return "{%s}" % ", ".join("%s: %s" % (self.lit(k), self.lit(v)) for k, v in x.items())
        if isinstance(x, str):
            return python_string(x)
        return _number(x) if isinstance(x, float) else repr(x)

    def tensor_literal(self, t, requires_grad=False):
        grad = ", requires_grad=True" if requires_grad else ""
        if t.numel() <= LITERAL_MAX and not t.is_complex() and t.layout == torch.strided:
            return "torch.tensor(%s, dtype=%s%s)" % (_nested(t.cpu().tolist()), t.dtype, grad)
        if t.dtype not in _ST_DTYPES:
            raise forms.refuse("a %s tensor" % t.dtype, "it has no sidecar form")
        key = "s%d" % len(self.sidecar)
        self.sidecar[key] = t.detach().cpu().contiguous()
        self.helpers.update(("_sidecar", "_safetensors"))
        return "_sidecar(%s)%s" % (python_string(key), ".requires_grad_()" if requires_grad else "")

    def params(self, handles):
        """The parameters of modules, optimizers and tensors, as the verbs gather them (optim.params_of)."""
        parts = []
        for h in handles:
            name = self.lit(h)
            kind = parse_handle(h[1])[0] if isinstance(h, tuple) and h[0] == "h" else "tensor"
            parts.append({"nn": "*%s.parameters()" % name,
                          "optim": "*[p for g in %s.param_groups for p in g['params']]" % name}.get(kind, name))
        return "[%s]" % ", ".join(parts)

    def _constructor(self, name, values):
        if name == "Sequential":
            return "torch.nn.Sequential(%s)" % ", ".join(self.lit(m) for m in values.get("modules", []))
        return "torch.nn.%s(%s)" % (self.name(name), self.keywords(values))

    def keywords(self, values):
        """`name=value, …` of a dict of arguments: each name a Python name, each value a literal."""
        return ", ".join("%s=%s" % (self.name(k), self.lit(v)) for k, v in values.items())

    def pytorch_op(self, name):
        """name, when it is an op of PyTorch's registry that this daemon's table holds (not a verb): a call of
        torch.NAME in the script. A session file from elsewhere may name any function (torch.load…)."""
        op = self.table.ops.get(name) if self.table is not None else None
        if self.table is not None and (op is None or op.verb):
            raise forms.refuse(python_string(str(name)), "it is no op of PyTorch's registry in this daemon's table")
        return self.name(name, dotted=True)

    @staticmethod
    def name(text, dotted=False):
        """text where the script needs a name (a class, a function, a keyword argument): a Python name, else
        not_portable (what a session file from elsewhere holds may be anything)."""
        try:
            return python_name(text, dotted)
        except ValueError as e:
            raise forms.refuse(python_string(str(text)), str(e)) from None


def _number(x):
    return repr(x) if math.isfinite(x) else "float(%r)" % repr(x)


def _nested(x):
    if isinstance(x, list):
        return "[%s]" % ", ".join(_nested(i) for i in x)
    return _number(x) if isinstance(x, float) else repr(x)


def units(entries, kept):
    """[(lines before it, entry)] for each kept entry: the generator set where the script's would differ."""
    kept_ids, out = {id(e) for e in kept}, []
    synced, seed, ended = False, None, False
    for e in entries:
        if ended:  # the entries before came from a saved session: the daemon that loaded it has its own generator
            synced, seed = False, None
        ended = bool(e.made.get("generator_ends"))
        if e.op == "manual_seed":
            seed, synced = e.args.get("seed"), False
            continue
        if id(e) not in kept_ids:
            if e.rng is not None:
                synced, seed = False, None
            continue
        prefix = []
        if e.rng is not None and not synced:
            seeded = seed is not None and torch.equal(torch.Generator().manual_seed(seed).get_state(), e.rng)
            prefix = ["torch.manual_seed(%d)" % seed] if seeded else \
                ["torch.set_rng_state(_state(%s))" % python_string(base64.b64encode(bytes(e.rng.tolist())).decode())]
            synced, seed = True, None
        out.append((prefix, e))
    return out


def script(entries, registry, target=None, sidecar_name=None, table=None):
    """(the script's text, {key: tensor} for the sidecar) for the log's entries (only what made `target`);
    table: the daemon's op table, which a call of torch.NAME must be a row of."""
    entries = [e for e in entries if e.exit == 0 or (e.op == "data.next" and e.made.get("epoch_end"))]
    kept = slicing.backward_slice(entries, target) if target else entries
    if target and not any(target in e.outputs for e in kept):
        raise forms.refuse(target, "no logged request made it (made before the history begins, or not by an op)")
    w = Writer(entries, registry, table)
    lines, rename, hidden = loops.body(units(entries, kept), w, [target] if target else ())
    lines = _inputs(kept, w, registry) + lines
    compared, left_out = checks.expected(entries, kept, registry, target, hidden)
    head = [python_comment(line) for line in _header(target, len(kept))] + ["import base64", "import sys", "", "import torch", ""]
    if w.sidecar:
        head.append("SIDECAR = %s" % python_string(sidecar_name or sidecar_name_of(w.sidecar)))
    head += [_HELPERS[n] for n in sorted(w.helpers)]
    if any(line.startswith("torch.set_rng_state(") for line in lines):
        head.append("def _state(text):\n    return torch.frombuffer(bytearray(base64.b64decode(text)), dtype=torch.uint8)\n")
    tail = ["", inspect.getsource(digest.digest), checks.lines(compared, left_out)]
    text = "\n".join(head + lines + tail)
    named = named_variables(registry)
    return loops.HANDLE.sub(lambda m: variable(rename.get(m.group(1), m.group(1)), w.epochs, named), text), w.sidecar


def sidecar_name_of(tensors):
    """The sidecar's name when the caller gives none: history-HEX.safetensors, HEX the start of the sha256 of its
    tensors (digest.py), so one name is always the same bytes (a second write of it changes nothing)."""
    h = hashlib.sha256()
    for key in sorted(tensors):
        h.update(("%s %s\n" % (key, digest.digest(tensors[key]))).encode())
    return "history-%s.safetensors" % h.hexdigest()[:16]


def _header(target, count):
    return ["Written by `torch history --python%s` (torchsh %s, torch %s): %d request(s) as PyTorch."
            % (" --for %s" % python_string(target) if target else "", __version__, torch.__version__, count),
            "Run it with python; `python THIS.py --check` also compares each object's sha256 with the daemon's."]


def _inputs(kept, w, registry):
    """Lines making the tensors kept entries read that no kept entry made: their values now (a tensor sent
    in through the API, or one made before the history's oldest entry)."""
    made = {h for e in kept for h in e.outputs}
    out = []
    for h in dict.fromkeys(h for e in kept for h in handles_in(e.args) + handles_in(e.made.get("call", ()))):
        if h in made:
            continue
        entry = _held(registry, h)
        if entry is None or entry.kind != "tensor":
            raise forms.refuse(h, "no logged request made it, and it is no longer held as a tensor")
        t = entry.obj
        out.append("%s = %s  # its value when this was written" % (w.v(h), w.tensor_literal(t.detach(), t.requires_grad)))
        made.add(h)
    return out


def _held(registry, handle):
    return registry.entry(handle) if registry.holds(handle) else None
