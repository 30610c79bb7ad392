"""The end of a `torch history --python` script: `python s.py --check` compares the objects it made with
the daemon's, by the sha256 of their tensors (digest.py, whose source the script carries).

What it compares: each object whose every change the script replays (slice.fully_kept), still held as a
tensor, module or optimizer, the target first, then the newest, CHECKS_MAX at most. What it says is what it
did: "N of M object(s) match", each difference named, and the objects it made but did not compare (those
without values to hash, in the daemon or in the script: a lazy module before its first forward, a meta
tensor; those past the first CHECKS_MAX) named on a line of their own, so a match never reads as more than it
is, and one such object never fails the script of the whole session. A script that compares nothing fails
its check (exit 1, saying so): a check that passes has compared something.
"""
import torch

from torchsh.history import digest, loops, slice as slicing
from torchsh.quoting import python_string

CHECKS_MAX = 50   # objects compared at the end (the target and the newest others)


def expected(entries, kept, registry, target, hidden):
    """({placeholder: sha256} of the objects compared, [placeholder] of those left out)."""
    handles = [h for h in slicing.fully_kept(entries, kept) if h not in hidden]
    handles = ([target] if target in handles else []) + [h for h in handles[::-1] if h != target]
    out, left_out = {}, []
    for h in handles:
        entry = registry.entry(h) if registry.holds(h) else None
        if entry is None or entry.kind not in ("tensor", "nn", "optim"):
            continue
        if len(out) >= CHECKS_MAX or without_values(entry.obj):
            left_out.append(loops.placeholder(h))
        else:
            out[loops.placeholder(h)] = digest.digest(entry.obj)
    return out, left_out


def without_values(obj):
    """Tensors without values to hash: a lazy module's (or an optimizer's over one) before its first forward,
    a meta tensor's or a module's on the meta device."""
    if isinstance(obj, torch.optim.Optimizer):
        tensors = [p for g in obj.param_groups for p in g["params"]]
    elif isinstance(obj, torch.nn.Module):
        tensors = list(obj.parameters()) + list(obj.buffers())
    else:
        tensors = [obj]
    return any(torch.nn.parameter.is_lazy(t) or t.is_meta for t in tensors)


def lines(compared, left_out):
    """The script's check, for expected()'s answer. Each placeholder becomes its variable's name (an
    identifier: python.variable()), so it goes between the quotes as it is; each sha256 is a literal."""
    names = "".join("        \"%s\",\n" % p for p in left_out)
    sums = "".join("        \"%s\": %s,\n" % (p, python_string(d)) for p, d in compared.items())
    return _CHECK % ("{\n%s}" % sums, "[\n%s]" % names, CHECKS_MAX)


_CHECK = '''
if "--check" in sys.argv[1:]:
    _expected = %s
    _bad = [n for n, d in _expected.items() if n not in globals() or digest(globals()[n]) != d]
    for n in _bad:
        print("check: %%s differs from the daemon's" %% n, file=sys.stderr)
    print("check: %%d of %%d object(s) match the daemon's" %% (len(_expected) - len(_bad), len(_expected)))
    _not_compared = %s
    if _not_compared:
        print("check: %%d more object(s) made but not compared (without values: a lazy module before its first "
              "forward, a meta tensor; or past the first %d): %%s" %% (len(_not_compared), ", ".join(_not_compared)))
    if not _expected:
        print("check: nothing to compare: the daemon held none of the objects this script makes when it was "
              "written", file=sys.stderr)
    sys.exit(1 if _bad or not _expected else 0)
'''
