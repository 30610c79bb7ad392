"""The status record behind `torch daemon status` and GET /v1/status. Lock-free."""
import os
import time

import torch

from torchsh.daemon.lifecycle import format_duration
from torchsh.registry.census import bytes_held


def rss_bytes():
    """Resident memory of the whole daemon: registry objects, autograd graphs, caches, PyTorch itself."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def status_dict(app):
    busy = None
    if app.busy_since is not None:
        busy = {"op": app.busy_op, "for_s": round(time.monotonic() - app.busy_since, 3)}
    remaining = app.remaining_seconds()
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
        "bytes_held": bytes_held(app.registry),
        "rss_bytes": rss_bytes(),
        "scopes": len(app.registry.open_scopes()),
        "ops": len(app.table),
        "table_build_ms": round(app.table_seconds * 1000, 1),
        "busy": busy,
        "socket": app.socket_path,
        "log": app.log_path,
    }


def status_text(s):
    objects = ", ".join("%d %s" % (n, k) for k, n in s["objects"].items())
    lines = [
        ("pid", s["pid"]), ("version", "torchsh %s, torch %s" % (s["version"], s["torch_version"])),
        ("devices", " ".join(s["devices"])), ("uptime", format_duration(s["uptime_s"])),
        ("idle", format_duration(s["idle_s"])),
        ("remaining", format_duration(s["remaining_s"]) + ("" if s["ttl_s"] is None else " (ttl %s)" % format_duration(s["ttl_s"]))),
        ("objects", objects), ("bytes held", _human(s["bytes_held"])), ("memory (rss)", _human(s["rss_bytes"])),
        ("busy", "%s for %.1fs" % (s["busy"]["op"], s["busy"]["for_s"]) if s["busy"] else "no"),
        ("socket", s["socket"]), ("log", s["log"]),
    ]
    return "".join("%-13s %s\n" % (k + ":", v) for k, v in lines)


def _human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return ("%d %s" if unit == "B" else "%.1f %s") % (n, unit)
        n /= 1024
