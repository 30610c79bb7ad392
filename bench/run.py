"""Every benchmark, one table: `.venv/bin/python bench/run.py [--quick] [--device cuda] [--json PATH]`.

`--against REV [--rounds N]`: the same rows for this tree and for REV (a commit, built in a temporary
worktree) in one run, interleaved, both columns and their ratio; a row over 20 % slower is flagged
(bench/against.py). A closing note quotes it against the previous landing.

Starts its own daemon on a private socket (and stops it), runs each benchmark several times with
its reference interleaved in the same run, prints median, p90, reference, ratio and target per row,
flags rows where the machine was noisy, and writes a JSON copy (bench/results/ by default).
Benchmarks, not tests: nothing here fails because the machine is slow.
"""
import argparse
import datetime
import importlib
import json
import os
import platform
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import NOISY, ROOT, Daemon  # noqa: E402

OURS = ("latency", "idiom", "api", "startup", "bulk", "value", "contention", "models", "predict", "runs",
        "profiler")  # run(daemon, quick, [device])
OTHERS = ("training", "nushell", "fit", "fit_distributed", "remote", "remote_ssh", "sweep", "serve",
          "compile", "lm", "lm_serve", "agents_mcp", "data_stream")  # run(quick=False) -> rows
DEVICE_AWARE = ("api", "startup")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run, ~1 minute)")
    p.add_argument("--device", default=None, help="cuda: the tensor benchmarks use CUDA (TORCHSH_DEVICE)")
    p.add_argument("--json", default=None, help="where to write the JSON copy (default bench/results/)")
    p.add_argument("--only", default=None, help="comma-separated benchmark modules to run")
    p.add_argument("--against", default=None, metavar="REV", help="also run REV (a commit) and compare, interleaved")
    p.add_argument("--rounds", type=int, default=3, help="with --against: runs of each side per group (default 3)")
    args = p.parse_args(argv)
    if args.against:
        return against_main(args)
    device = _check_device(args.device)
    load_before = os.getloadavg()
    rows, skipped = [], []
    if args.device and not device:
        skipped.append("%s: not available here (torch.cuda.is_available() is False); GPU rows skipped" % args.device)
    with Daemon(device) as daemon:
        for name in _selected(args.only):
            rows += _run_one(name, daemon, args.quick, device, skipped)
    if device:  # our rows ran on a daemon whose default device was this one
        rows = [dict(r, name="%s [%s]" % (r["name"], device), device=device) if r["group"] in OURS else r
                for r in rows]
    meta = {"when": datetime.datetime.now().isoformat(timespec="seconds"), "host": platform.node(),
            "cpus": os.cpu_count(), "python": sys.version.split()[0], "device": device or "cpu",
            "quick": args.quick, "loadavg_before": load_before, "loadavg_after": os.getloadavg(), "skipped": skipped}
    print(table(rows, meta))
    path = args.json or os.path.join(ROOT, "bench", "results", "bench-%s.json" % meta["when"].replace(":", ""))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)
    print("JSON copy: %s" % path)


def against_main(args):
    """--against REV: each selected group run by both trees, args.rounds times, interleaved."""
    from bench import against
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    load_before = os.getloadavg()
    with against.Checkout(args.against) as checkout:
        figures, first, notes = against.compare(_selected(args.only), checkout, args.rounds, args.quick,
                                                args.device, say)
        text, flagged = against.table(figures, first, checkout, notes, against.this_label())
    print("torchsh bench --against %s: %s, %s CPUs%s, %d rounds; load average %.1f before, %.1f after" % (
        args.against, datetime.datetime.now().isoformat(timespec="seconds"), os.cpu_count(),
        " (quick)" if args.quick else "", args.rounds, load_before[0], os.getloadavg()[0]))
    print(text)
    path = args.json or os.path.join(ROOT, "bench", "results", "against-%s-%s.json" % (
        checkout.label, datetime.datetime.now().isoformat(timespec="seconds").replace(":", "")))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"against": checkout.commit, "rounds": args.rounds, "quick": args.quick, "figures": figures,
                   "notes": notes}, f, indent=1)
    print("JSON copy: %s%s" % (path, "; %d row(s) flagged SLOWER" % flagged if flagged else ""))


def _check_device(device):
    if not device or not device.startswith("cuda"):
        return device
    import torch
    return device if torch.cuda.is_available() else None


def _selected(only):
    names = OURS + OTHERS
    return [n for n in names if n in only.split(",")] if only else names


def _run_one(name, daemon, quick, device, skipped):
    try:
        module = importlib.import_module("bench." + name)
    except ModuleNotFoundError as e:
        if e.name == "bench." + name:
            skipped.append("%s: bench/%s.py is not there yet" % (name, name))
            return []
        raise
    print("running %s ..." % name, file=sys.stderr, flush=True)
    try:
        if name in OTHERS:
            return [dict(r, group=name) for r in module.run(quick=quick)]
        if name in DEVICE_AWARE:
            return [dict(r, group=name) for r in module.run(daemon, quick=quick, device=device)]
        return [dict(r, group=name) for r in module.run(daemon, quick=quick)]
    except Exception:
        skipped.append("%s: failed: %s" % (name, traceback.format_exc().strip().splitlines()[-1]))
        traceback.print_exc()
        return []


def _fmt_time(ms):
    if ms is None:
        return "-"
    if ms < 1:
        return "%.1f us" % (ms * 1000)
    return "%.2f ms" % ms if ms < 100 else "%.0f ms" % ms


def _fmt_value(value, unit):
    """12345 MB/s, 0.704 s: whole numbers from 100 up, three significant digits below (a sweep's seconds)."""
    return ("%.0f %s" if abs(value) >= 100 else "%.3g %s") % (value, unit)


def _cells(r):
    if "value" in r:
        unit = r["unit"]
        return (_fmt_value(r["value"], unit), "", r.get("reference", ""),
                "-" if r.get("ref_value") is None else _fmt_value(r["ref_value"], unit))
    return (_fmt_time(r.get("median_ms")), _fmt_time(r.get("p90_ms")), str(r.get("reference", "")),
            _fmt_time(r.get("ref_median_ms")))


def table(rows, meta):
    head = ("benchmark", "median", "p90", "reference", "ref median", "ratio", "target", "met")
    lines = []
    for r in rows:
        ratio = "-" if r.get("ratio") is None else "%.2fx" % r["ratio"]
        met = {True: "yes", False: "NO", None: ""}[r.get("met")]
        noisy = r.get("noise") is not None and r["noise"] > NOISY
        name = r["name"] + (" (noisy: ref spread %.0f%%)" % (100 * r["noise"]) if noisy else "")
        lines.append((name,) + _cells(r) + (ratio, r.get("target") or "", met))
    widths = [max(len(str(x[i])) for x in lines + [head]) for i in range(len(head))]
    fmt = " | ".join("%%-%ds" % w for w in widths)
    out = ["torchsh bench: %s, %s CPUs, python %s, device %s%s; load average %.1f before, %.1f after" % (
        meta["when"], meta["cpus"], meta["python"], meta["device"], " (quick)" if meta["quick"] else "",
        meta["loadavg_before"][0], meta["loadavg_after"][0]), fmt % head, "-+-".join("-" * w for w in widths)]
    out += [fmt % line for line in lines]
    out += ["note: %s" % s for s in meta["skipped"]]
    if any(r.get("noise") and r["noise"] > NOISY for r in rows):
        out.append("noisy: the reference's per-round medians spread over %d%%: compare ratios, rerun for absolutes"
                   % (100 * NOISY))
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
