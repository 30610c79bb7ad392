"""The parity machinery: pick a sample per op (the first candidate PyTorch accepts in-process), run
many ops through the real `torch` CLI in one bash script, fetch every result in one file, compare.

Batching keeps ~700 ops at a few bash processes: inputs go in as one .pt file (`torch load --json`),
each op is one `torch …` line of one script, results come back as one .pt file (`torch save`).
"""
import json
import re
import shlex
from dataclasses import dataclass

import torch

from torchsh.vocab import dtype_name
from torchsh.registry.handles import looks_like_handle
from samples import NO_SAMPLE_REASONS, candidates


@dataclass
class Case:
    op: object            # OpSpec
    sample: object        # Sample
    expected: object      # what in-process PyTorch returned
    seeded: bool          # random: both sides run right after manual_seed(0)
    form: str = "args"    # args | stdin


def call(op, sample):
    return op.call(*sample.args, **sample.kwargs)


def pick(op):
    """(Case, None) for the first candidate PyTorch accepts, or (None, reason)."""
    error = "no candidate input"
    for sample in candidates(op):
        try:
            torch.manual_seed(0)
            first = call(op, sample)
            again = call(op, sample)
        except Exception as e:  # PyTorch refused this candidate: try the next one
            error = "PyTorch refused every candidate input (last: %s)" % str(e).split("\n")[0][:120]
            continue
        if _has_unsupported(first):
            return None, "returns %s, which the shell does not carry" % type(first).__name__
        return Case(op, sample, first, not same(first, again)), None
    return None, NO_SAMPLE_REASONS.get(op.name, error)


def _has_unsupported(result):
    if isinstance(result, (tuple, list)):
        return any(_has_unsupported(r) for r in result)
    return isinstance(result, (torch.Generator, torch.layout, torch.memory_format)) or callable(result)


# -- comparing ---------------------------------------------------------------------------------
def same(a, b):
    """Exact equality: same type, dtype, shape and bits; NaN positions equal."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and same_tensor(a, b)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    return type(a) is type(b) and a == b


def same_tensor(a, b):
    a, b = a.resolve_conj().resolve_neg(), b.resolve_conj().resolve_neg()
    if a.dtype != b.dtype or a.shape != b.shape or a.layout != b.layout:
        return False
    if a.is_complex():
        a, b = torch.view_as_real(a), torch.view_as_real(b)
    if a.is_floating_point():
        nan_a, nan_b = a.isnan(), b.isnan()
        if not torch.equal(nan_a, nan_b):
            return False
        a, b = a[~nan_a], b[~nan_b]
        bits = {2: torch.int16, 4: torch.int32, 8: torch.int64, 1: torch.int8}[a.element_size()]
        return torch.equal(a.contiguous().view(bits), b.contiguous().view(bits))
    return torch.equal(a, b)


def flat_tensors(result):
    """Tensors in the order the CLI prints their handles (tuples and lists: one per line)."""
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)) and result:
        parts = [flat_tensors(r) for r in result]
        return None if any(p is None for p in parts) else [t for p in parts for t in p]
    return None


def as_wire(result):
    """What the CLI prints for a non-tensor result, as JSON would read it back."""
    if isinstance(result, torch.dtype):
        return dtype_name(result)
    if isinstance(result, torch.Size):
        return list(result)
    if isinstance(result, (tuple, list)):
        return [as_wire(r) for r in result]
    if isinstance(result, complex):
        return [result.real, result.imag]
    return result


# -- the CLI side ------------------------------------------------------------------------------
def words(sample, handles, skip_first=False):
    """Command-line words for a sample; tensors become the handles loaded for them."""
    out = []
    args = sample.args[1:] if skip_first else sample.args
    for value in args:
        out += _words(value, handles)
    for name, value in sample.kwargs.items():
        w = _words(value, handles)
        if isinstance(value, bool):
            out.append("--%s=%s" % (name, w[0]))
        elif len(w) == 1:
            out += ["--" + name, w[0]]
        else:
            out += ["--" + name] + w
    return out


def _words(value, handles):
    if isinstance(value, torch.Tensor):
        return [handles[id(value)]]
    if isinstance(value, list) and value and all(isinstance(v, torch.Tensor) for v in value):
        return [handles[id(v)] for v in value]
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, torch.dtype):
        return [dtype_name(value)]
    if isinstance(value, (list, tuple)):
        return [json.dumps(value)]
    return [str(value)]


def input_tensors(cases):
    """{name: tensor} for every distinct input tensor object of the cases."""
    seen = {}
    for case in cases:
        for value in list(case.sample.args) + list(case.sample.kwargs.values()):
            for t in (value if isinstance(value, list) else [value]):
                if isinstance(t, torch.Tensor) and id(t) not in seen:
                    seen[id(t)] = t
    return seen


def run_batch(sh, cases):
    """Run every case through bash; returns [(case, exit status, stdout+stderr lines)]."""
    tensors = input_tensors(cases)
    path = sh.tmp("inputs.pt")
    torch.save({"t%d" % i: t for i, t in enumerate(tensors.values())}, path)
    loaded = json.loads(sh("torch load %s --json" % path))
    handles = {key: loaded["t%d" % i] for i, key in enumerate(tensors)}
    lines = []
    for k, case in enumerate(cases):
        cmd = " ".join(shlex.quote(w) for w in ["torch", case.op.name] + words(case.sample, handles,
                                                                                   case.form == "stdin"))
        if case.form == "stdin":
            cmd = "echo %s | %s" % (handles[id(case.sample.args[0])], cmd)
        seed = "torch manual_seed 0 >/dev/null; " if case.seeded else ""
        lines.append("echo '@@%d'; %s%s 2>&1; echo \"@@rc $?\"" % (k, seed, cmd))
    out = sh.run("\n".join(lines), timeout=600).out
    return _split(out, cases)


_WARNING = re.compile(r"^torch: [\w. ]+: warning: ")


def _split(out, cases):
    results, current, body = [], None, []
    for line in out.split("\n"):
        if line.startswith("@@rc "):
            results.append((cases[current], int(line[5:]), body))
            current, body = None, []
        elif line.startswith("@@") and line[2:].isdigit():
            current, body = int(line[2:]), []
        elif current is not None and not _WARNING.match(line):  # PyTorch's warnings are not the result
            body.append(line)
    return results


def fetch_all(sh, handles):
    """Every handle's tensor, exactly, through one `torch save` to a .pt file."""
    if not handles:
        return {}
    path = sh.tmp("results.pt")
    sh("torch save %s %s" % (" ".join(handles), path))
    loaded = torch.load(path, weights_only=True)
    if isinstance(loaded, torch.Tensor):
        loaded = {"0": loaded}
    return {h: loaded[str(i)] for i, h in enumerate(handles)}


def check(results, fetched):
    """[(op name, form, problem)] for every case whose CLI result differs from PyTorch's."""
    problems = []
    for case, code, body in results:
        name = "%s [%s %s]" % (case.op.name, case.form, case.sample.label)
        if code != 0:
            problems.append((name, "exit %d: %s" % (code, " ".join(body)[:300])))
            continue
        lines = [b for b in body if b.strip()]
        want = flat_tensors(case.expected)
        if want is not None and lines and all(looks_like_handle(b) for b in lines):
            got = [fetched[b.strip()] for b in lines]
            if len(got) != len(want) or not all(same_tensor(g, w) for g, w in zip(got, want)):
                problems.append((name, "tensors differ: %s vs %s" % (_describe(got), _describe(want))))
            continue
        if isinstance(as_wire(case.expected), str):  # dtype names and strings print as plain text
            if "\n".join(lines) != as_wire(case.expected):
                problems.append((name, "text %r, PyTorch %r" % ("\n".join(lines), as_wire(case.expected))))
            continue
        try:
            got = json.loads("\n".join(lines)) if lines else None
        except ValueError:
            problems.append((name, "unreadable output %r" % "\n".join(lines)[:200]))
            continue
        if not same(got, as_wire(case.expected)):
            problems.append((name, "value %r, PyTorch %r" % (got, as_wire(case.expected))))
    return problems


def _describe(tensors):
    return ", ".join("%s%s" % (str(t.dtype).replace("torch.", ""), list(t.shape)) for t in tensors)
