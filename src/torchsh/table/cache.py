"""The PyTorch half of the op table, cached as JSON so a cold daemon start skips reading ~2,000
ATen schemas and ~700 docstrings (200-700 ms on a busy 2-core machine; loading is ~30 ms).

The key is the torch version plus the text of every table/*.py module, so installing another
PyTorch or editing the generator starts a fresh file. Plain JSON, never pickle: `call` is stored as
(module, attribute) and looked up again. Any unreadable or stale file is simply rebuilt.
`TORCHSH_TABLE_CACHE=off` turns it off; a path there puts the files in that folder.
"""
import gc
import hashlib
import json
import os
import sys
import tempfile

import torch

from torchsh.cachefiles import folder as cache_folder
from torchsh.table.spec import MISSING, ArgSpec, OpSpec, Overload

FORMAT = 3  # 2: rows carry arg_docs; 3: and read_only
_CALL_HOMES = (("torch.Tensor", torch.Tensor), ("torch.nn.functional", torch.nn.functional),
               ("torch.linalg", torch.linalg), ("torch.fft", torch.fft), ("torch.special", torch.special),
               ("torch", torch))


def cached_rows(build):
    """The rows build() makes, from the cache file when it is current; writes it when not."""
    folder = cache_folder()
    if folder is None:
        return build()
    path = os.path.join(folder, "optable-%s.json" % cache_key())
    rows = _load(path)
    if rows is None:
        rows = build()
        _save(path, rows)
    return rows


def cache_key():
    digest = hashlib.sha256(("%s|%s|%d" % (torch.__version__, sys.version, FORMAT)).encode())
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(here)):
        if name.endswith(".py"):
            with open(os.path.join(here, name), "rb") as f:
                digest.update(name.encode() + b"\0" + f.read())
    return digest.hexdigest()[:20]


def to_json(op):
    attr = op.name.rsplit(".", 1)[-1]
    home = next(h for h, module in _CALL_HOMES if getattr(module, attr, None) is op.call)
    return {"name": op.name, "category": op.category, "summary": op.summary, "doc": op.doc,
            "factory": op.factory, "read_only": op.read_only, "home": home, "attr": attr, "arg_docs": op.arg_docs,
            "overloads": [{"name": ov.name, "returns": ov.returns, "args": [_arg_json(a) for a in ov.args]}
                          for ov in op.overloads]}


def from_json(row):
    module = dict(_CALL_HOMES)[row["home"]]
    overloads = [Overload(args=tuple(_arg(a) for a in ov["args"]), returns=ov["returns"], name=ov["name"])
                 for ov in row["overloads"]]
    return OpSpec(name=row["name"], category=row["category"], summary=row["summary"], overloads=overloads,
                  call=getattr(module, row["attr"]), doc=row["doc"], factory=row["factory"], arg_docs=row["arg_docs"],
                  read_only=row["read_only"])


def _arg_json(a):
    out = {"n": a.name, "k": a.kind, "o": a.optional, "kw": a.keyword_only, "t": a.type_text}
    if a.default is not MISSING:
        out["d"] = a.default if _plain(a.default) else str(a.default)
    return out


def _arg(d):
    return ArgSpec(d["n"], d["k"], default=d.get("d", MISSING), optional=d["o"], keyword_only=d["kw"],
                   type_text=d["t"])


def _plain(value):
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return isinstance(value, (bool, int, float, str, type(None)))


def _load(path):
    # ~4,000 small objects: with torch's millions of objects alive, the cyclic GC passes these
    # allocations trigger cost more than the loading itself (100+ ms), and nothing here makes cycles
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return [from_json(row) for row in data["rows"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    finally:
        if was_enabled:
            gc.enable()


def _save(path, rows):
    """Atomic write; a read-only home or a full disk only costs the next start its speed."""
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"torch": torch.__version__, "rows": [to_json(op) for op in rows]}, f)
        os.replace(tmp, path)
        _prune(os.path.dirname(path), keep=path)
    except (OSError, StopIteration, TypeError, ValueError, AttributeError):
        try:
            os.unlink(tmp)
        except (OSError, UnboundLocalError):
            pass


def _prune(folder, keep, age_s=86400):
    """Drop files of other torch versions or sources unused for a day (a day: two installs that
    share a home do not keep deleting each other's file)."""
    import time
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if name.startswith("optable-") and path != keep and os.path.getmtime(path) < time.time() - age_s:
            os.unlink(path)
