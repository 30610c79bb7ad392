"""Rows as fixed-width columns under a header: the text of `nn info`, `nn summary`, `model inspect` and the like."""
from torchsh.results import Text


def print_table(rows, header):
    """Fixed-width columns for info/summary text."""
    table = [header] + rows
    widths = [max(len(str(r[i])) for r in table) for i in range(len(header))]
    return Text("".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() + "\n" for r in table))
