"""The status record behind `torch daemon status` and GET /v1/status. Lock-free.

Memory: rss (what the OOM killer counts) against the budget (torchsh.memory), and the bytes behind
handles (what `torch free` can give back). Connections and the queue come from the server's
io_stats when it has set them; the running op and its age from the tensor lock's bookkeeping.
"""
import logging
import os
import time

import torch

from torchsh import memory
from torchsh.registry.census import bytes_held
from torchsh.text.durations import format_duration
from torchsh.train.compiled import steps as compiled

log = logging.getLogger("torchd")


def rss_bytes():
    """Resident memory of the whole daemon: registry objects, autograd graphs, caches, PyTorch itself."""
    return memory.rss_bytes()


def _bytes_held(app):
    try:
        return bytes_held(app.registry)
    except Exception:  # status must answer whatever the registry holds (a lazy module, a sparse tensor)
        log.exception("bytes_held failed")
        return None


def _io(app):
    stats = getattr(app, "io_stats", None)
    if stats is None:
        return {}
    try:
        return dict(stats())
    except Exception:
        log.exception("io_stats failed")
        return {}


def status_dict(app):
    busy = None
    busy_since, busy_op = app.busy_since, app.busy_op  # read once: the lock holder may clear them meanwhile
    if busy_since is not None:
        busy = {"op": busy_op, "for_s": round(time.monotonic() - busy_since, 3)}
    remaining = app.remaining_seconds()
    budget = getattr(app, "memory", None)
    rss = rss_bytes()
    io = _io(app)
    return {
        "pid": os.getpid(),
        "version": app.version,
        "torch_version": torch.__version__,
        "epoch": app.registry.epoch,
        "devices": app.devices(),
        "uptime_s": round(time.time() - app.started, 3),
        "idle_s": round(app.idle_seconds(), 3),
        "ttl_s": app.ttl,
        "remaining_s": None if remaining is None else round(remaining, 3),
        "objects": app.registry.counts(),
        "bytes_held": _bytes_held(app),
        "rss_bytes": rss,
        "memory_budget_bytes": budget.limit if budget else None,
        "memory_budget_rule": budget.rule if budget else None,
        "memory_refused": budget.refused if budget else 0,
        "connections": io.get("connections"),
        "connection_limit": io.get("connection_limit"),
        "fast_connections": io.get("fast_connections") if app.fastpath else None,  # None: fast path off
        "doors": io.get("doors"),  # each listening socket: connections with a slot, and those waiting for a token
        "queued": io.get("queued"),
        "scopes": len(app.registry.open_scopes()),
        "history": app.history.stats() if getattr(app, "history", None) else None,
        "ops": len(app.table),
        "table_build_ms": round(app.table_seconds * 1000, 1),
        "busy": busy,
        "socket": app.socket_path,
        "log": app.log_path,
        "listen": _listen(app),
        "compiled": _compiled(app),
    }


def _compiled(app):
    """`--compile`'s functions: whose (a model's or optimizer's handle), for which shapes, compile seconds
    and recompiles (train/compiled/steps.py)."""
    return [dict(row, handle=app.registry.handle_of(owner)) for owner, row in compiled.entries()]


def _listen(app):
    """The TLS listener for remote contexts (torchd --listen): its address and certificate, else None."""
    tls = getattr(app, "tls_listener", None)
    return None if tls is None else "tls://%s:%d (certificate %s)" % (tls.addr, tls.port, tls.fingerprint)


def status_text(s):
    objects = ", ".join("%d %s" % (n, k) for k, n in s["objects"].items())
    lines = [("context", s["context"])] if "context" in s else []
    lines += [
        ("pid", s["pid"]), ("version", "torchsh %s, torch %s" % (s["version"], s["torch_version"])),
        ("devices", " ".join(s["devices"])), ("uptime", format_duration(s["uptime_s"])),
        ("idle", format_duration(s["idle_s"])),
        ("remaining", format_duration(s["remaining_s"]) + ("" if s["ttl_s"] is None else " (ttl %s)" % format_duration(s["ttl_s"]))),
        ("objects", objects), ("history", _history_text(s.get("history"))), ("bytes held", "?" if s["bytes_held"] is None else _human(s["bytes_held"])),
        ("memory (rss)", _memory_text(s)), ("budget", s.get("memory_budget_rule") or "none"),
        ("connections", _connections_text(s)),
        ("busy", "%s for %.1fs" % (s["busy"]["op"], s["busy"]["for_s"]) if s["busy"] else "no"),
        ("queue", "?" if s.get("queued") is None else "%d waiting for the tensor lock" % s["queued"]),
        ("socket", s["socket"]), ("log", s["log"]),
    ] + ([("listen", s["listen"])] if s.get("listen") else [])
    lines += [("compiled", _compiled_text(row)) for row in s.get("compiled") or ()]
    return "".join("%-13s %s\n" % (k + ":", v) for k, v in lines)


def _compiled_text(row):
    recompiles = row["recompiles"]
    return "%s %s%s: compiled in %.1fs, %d recompile%s, %d call%s" % (
        row["handle"] or "(no handle)", row["what"], " " + row["signature"] if row["signature"] else "",
        row["compile_s"], recompiles, "" if recompiles == 1 else "s", row["calls"], "" if row["calls"] == 1 else "s")


def _history_text(h):
    if not h:
        return "?"
    return "%d request(s), %s (bounds %d, %s)%s" % (h["entries"], _human(h["bytes"]), h["max_entries"],
                                                   _human(h["max_bytes"]),
                                                   "; %d oldest let go" % h["dropped"] if h["dropped"] else "")


def _connections_text(s):
    if s.get("connections") is None:
        return "?"
    fast = "" if s.get("fast_connections") is None else " (+%d on the fast path)" % s["fast_connections"]
    return "%s of %s%s" % (s["connections"], s["connection_limit"], fast)


def _memory_text(s):
    if s.get("memory_budget_bytes") is None:
        return "%s, no budget" % _human(s["rss_bytes"])
    refused = "; %d op(s) refused" % s["memory_refused"] if s.get("memory_refused") else ""
    return "%s of a %s budget (%.0f%%)%s" % (_human(s["rss_bytes"]), _human(s["memory_budget_bytes"]),
                                             100.0 * s["rss_bytes"] / s["memory_budget_bytes"], refused)


def _human(n):
    return memory.human(n)
