"""The top-N ops table of a profile: one row per op name from torch.profiler's key_averages(), sorted, cut to N,
and written as aligned columns (text), tab-separated values with a header (tsv) or a JSON list of records.

The CPU columns come from the trace's events (cpu_op and user_annotation: the ops), not from key_averages(),
which builds every event's tree in Python: with with_stack that is every Python call, and it took 1.6 s for
12,000 events here (the trace's walk: 0.1 s). The CUDA columns, when CUDA is there, are key_averages()'s.
"""
from torchsh.profile.folded import EPS_US
from torchsh.results import Text

CPU_COLUMNS = ("name", "calls", "self_cpu_us", "total_cpu_us", "self_cpu_memory_bytes")
CUDA_COLUMNS = ("self_cuda_us", "total_cuda_us", "self_cuda_memory_bytes")
SORTS = {"self_cpu": "self_cpu_us", "total_cpu": "total_cpu_us", "calls": "calls", "memory": "self_cpu_memory_bytes"}
FORMATS = ("text", "tsv", "json")
OP_CATEGORIES = frozenset({"cpu_op", "user_annotation"})


def rows(events):
    """One record per op name from a chrome trace's events: calls, total time (its span), self time (less the ops
    it called, as PyTorch counts it) and the CPU memory it allocated less what it freed, itself (the trace's
    [memory] events, each the innermost op's around it)."""
    stats = {}
    for thread in _by_thread(events).values():
        _add_thread(thread, stats)
    return [dict(name=name, calls=s["calls"], self_cpu_us=round(s["self"], 3), total_cpu_us=round(s["total"], 3),
                 self_cpu_memory_bytes=s["memory"]) for name, s in stats.items()]


def add_cuda(records, averages):
    """The CUDA columns, from key_averages() (kernels run on the device, linked to their ops only there)."""
    by_name = {avg.key: avg for avg in averages}
    for r in records:
        avg = by_name.get(r["name"])
        r.update(self_cuda_us=round(avg.self_device_time_total, 3) if avg else 0.0,
                 total_cuda_us=round(avg.device_time_total, 3) if avg else 0.0,
                 self_cuda_memory_bytes=avg.self_device_memory_usage if avg else 0)
    return records


def _by_thread(events):
    threads = {}
    for e in events:
        op = e.get("ph") == "X" and e.get("cat") in OP_CATEGORIES and isinstance(e.get("dur"), (int, float))
        memory = e.get("ph") == "i" and e.get("name") == "[memory]" and (e.get("args") or {}).get("Device Type") == 0
        if (op or memory) and isinstance(e.get("ts"), (int, float)):
            threads.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    return threads


def _add_thread(events, stats):
    """Walk one thread's ops and memory events in time order (an op before an event at its start)."""
    events.sort(key=lambda e: (e["ts"], e["ph"] != "X", -e.get("dur", 0)))
    stack = []  # [stats of its name or None, end, its child ops' time, its span, the entry it is part of]
    for e in events:
        start = float(e["ts"])
        end = start + max(float(e.get("dur", 0)), 0.0)
        while stack and stack[-1][1] < end - EPS_US:  # not inside the open op: that one has ended
            _close(stack.pop())
        owner = (stack[-1][4] or stack[-1]) if stack else None
        if e["ph"] != "X":
            if owner is not None:
                owner[0]["memory"] += int(e["args"].get("Bytes", 0))
            continue
        s = stats.setdefault(e["name"], {"calls": 0, "self": 0.0, "total": 0.0, "memory": 0})
        if owner is not None and owner[0] is s and owner[2] == 0.0:
            # an op whose first child is itself (aten::sum calling its other overload) is one call, as
            # key_averages() counts it: the inner one's children are the outer one's
            stack.append([None, end, 0.0, 0.0, owner])
            continue
        s["calls"] += 1
        s["total"] += end - start
        if owner is not None:
            owner[2] += end - start
        stack.append([s, end, 0.0, end - start, None])
    while stack:
        _close(stack.pop())


def _close(entry):
    s, _, children, dur, part_of = entry
    if part_of is None:
        s["self"] += max(dur - children, 0.0)


def top(records, sort, n):
    """The n records with the most of the sort key (SORTS), ties by name."""
    key = SORTS[sort]
    return sorted(records, key=lambda r: (-r[key], r["name"]))[:n]


class OpsTable(list):
    """The rows as the CLI prints them: aligned columns, numbers to the right (JSON rows through --json and
    the API, so Nushell gets a table)."""

    def __init__(self, records, columns):
        super().__init__(records)
        self.columns = columns

    def text(self):
        head = [c for c in self.columns]
        cells = [head] + [[_cell(r[c]) for c in self.columns] for r in self]
        widths = [max(len(row[i]) for row in cells) for i in range(len(head))]
        lines = []
        for row in cells:
            name, numbers = row[0].ljust(widths[0]), [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
            lines.append("  ".join([name] + numbers).rstrip())
        return "\n".join(lines) + "\n"


def tsv(records, columns):
    """Tab-separated values with a header line; an op name's tabs and newlines become spaces."""
    lines = ["\t".join(columns)]
    for r in records:
        lines.append("\t".join(" ".join(str(r[c]).split()) if c == "name" else str(r[c]) for c in columns))
    return Text("\n".join(lines) + "\n")


def rendered(records, columns, format):
    """The finish's result in the chosen format: OpsTable (text), Text (tsv) or a plain list (json)."""
    if format == "tsv":
        return tsv(records, columns)
    if format == "json":
        return list(records)
    return OpsTable(records, columns)


def _cell(value):
    return "%.1f" % value if isinstance(value, float) else str(value)
