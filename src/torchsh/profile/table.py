"""The top-N ops table of a profile: one row per op name from torch.profiler's key_averages(), sorted, cut to N,
and written as aligned columns (text), tab-separated values with a header (tsv) or a JSON list of records.

Only ops are rows (the trace's cpu_op and user_annotation names): with with_stack, key_averages() also averages
every Python function, which the folded stacks show better."""
from torchsh.call.results import Text

CPU_COLUMNS = ("name", "calls", "self_cpu_us", "total_cpu_us", "self_cpu_memory_bytes")
CUDA_COLUMNS = ("self_cuda_us", "total_cuda_us", "self_cuda_memory_bytes")
SORTS = {"self_cpu": "self_cpu_us", "total_cpu": "total_cpu_us", "calls": "calls", "memory": "self_cpu_memory_bytes"}
FORMATS = ("text", "tsv", "json")


def rows(averages, op_names, cuda=False):
    """Records of key_averages() entries whose name is an op's (op_names), times in microseconds."""
    out = []
    for avg in averages:
        if avg.key not in op_names:
            continue
        row = {"name": avg.key, "calls": avg.count, "self_cpu_us": round(avg.self_cpu_time_total, 3),
               "total_cpu_us": round(avg.cpu_time_total, 3), "self_cpu_memory_bytes": avg.self_cpu_memory_usage}
        if cuda:
            row.update(self_cuda_us=round(avg.self_device_time_total, 3),
                       total_cuda_us=round(avg.device_time_total, 3),
                       self_cuda_memory_bytes=avg.self_device_memory_usage)
        out.append(row)
    return out


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
