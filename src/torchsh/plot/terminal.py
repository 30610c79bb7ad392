"""A line chart as Unicode text for a terminal: the first series in braille (2×4 dots a character, its
points joined), the others as one marker character per point, drawn over it; y labels at the top
(max) and bottom (min) rows, x labels under the axis, one legend line per series.

The chart is exactly `width` characters wide and `height` plot rows tall, plus the axis, the x labels
and the legend: height + 2 + len(series) lines. Pure: lists in, text out.
"""
from torchsh.errors import bad_argument

MARKERS = "×+o*#%@"        # series 2, 3, …; the first is the braille line
LINE_GLYPH = "⠒⠒"          # the legend's sample of the braille line
_DOT_BITS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [dot row][dot column] in a cell
_BRAILLE = 0x2800
MIN_COLUMNS, MIN_ROWS = 10, 2


def render(series, x_name, width=80, height=15):
    """Text of the chart of series ([Series], each with finite (x, y) points) over the x counter x_name."""
    xs = [x for s in series for x, _ in s.points]
    ys = [y for s in series for _, y in s.points]
    x_lo, x_hi, y_lo, y_hi = min(xs), max(xs), min(ys), max(ys)
    top, bottom = number(y_hi), number(y_lo)
    label_width = max(len(top), len(bottom))
    columns = width - label_width - 2
    if columns < MIN_COLUMNS or height < MIN_ROWS:
        raise bad_argument("a chart %dx%d is too small" % (width, height),
                           "give --width >= %d and --height >= %d" % (label_width + 2 + MIN_COLUMNS, MIN_ROWS))
    grid = Grid(columns, height, (x_lo, x_hi), (y_lo, y_hi))
    grid.line(series[0].points)
    for marker, s in zip(MARKERS, series[1:]):
        grid.mark(s.points, marker)
    lines = []
    for row, cells in enumerate(grid.rows()):
        label = top if row == 0 else bottom if row == height - 1 else ""
        tick = "┤" if label else "│"
        lines.append("%*s %s%s" % (label_width, label, tick, cells))
    lines.append(" " * label_width + " └" + "─" * columns)
    lines.append(" " * (label_width + 2) + _x_labels(number(x_lo), x_name, number(x_hi), columns))
    glyphs = [LINE_GLYPH] + [m + " " for m in MARKERS]
    lines += [legend(glyph, s, x_name)[:width] for glyph, s in zip(glyphs, series)]
    return "\n".join(lines) + "\n"


class Grid:
    """columns × rows character cells over a (columns·2) × (rows·4) dot plane; y grows upwards."""

    def __init__(self, columns, rows, x_range, y_range):
        self.columns, self.height = columns, rows
        self.x_range, self.y_range = x_range, y_range
        self.bits = [[0] * columns for _ in range(rows)]
        self.markers = {}

    def dot(self, x, y):
        """The dot (column, row) of a data point: the extremes land on the plane's edges."""
        return (_scale(x, self.x_range, self.columns * 2 - 1, False),
                _scale(y, self.y_range, self.height * 4 - 1, True))

    def line(self, points):
        dots = [self.dot(x, y) for x, y in points]
        for i, (c, r) in enumerate(dots):
            for dc, dr in _segment(dots[i - 1] if i else (c, r), (c, r)):
                self.bits[dr // 4][dc // 2] |= _DOT_BITS[dr % 4][dc % 2]

    def mark(self, points, marker):
        for x, y in points:
            c, r = self.dot(x, y)
            self.markers[(r // 4, c // 2)] = marker

    def rows(self):
        for r, bits in enumerate(self.bits):
            yield "".join(self.markers.get((r, c)) or (chr(_BRAILLE + b) if b else " ") for c, b in enumerate(bits))


def _scale(v, value_range, last, flip):
    lo, hi = value_range
    if hi == lo:
        return last // 2
    at = round((v - lo) / (hi - lo) * last)
    return last - at if flip else at


def _segment(a, b):
    """The dots from a to b inclusive (Bresenham), so a line has no gaps however steep."""
    (c0, r0), (c1, r1) = a, b
    dc, dr = abs(c1 - c0), -abs(r1 - r0)
    sc, sr = (1 if c1 > c0 else -1), (1 if r1 > r0 else -1)
    err, out = dc + dr, []
    while True:
        out.append((c0, r0))
        if (c0, r0) == (c1, r1):
            return out
        e2 = 2 * err
        if e2 >= dr:
            err, c0 = err + dr, c0 + sc
        if e2 <= dc:
            err, r0 = err + dc, r0 + sr


def _x_labels(lo, name, hi, columns):
    """`1 ... step ... 900` across the plot's width (the name dropped when it does not fit)."""
    gap = columns - len(lo) - len(hi)
    if gap >= len(name) + 2:
        left = (gap - len(name)) // 2
        return lo + " " * left + name + " " * (gap - len(name) - left) + hi
    return lo + " " * max(gap, 1) + hi


def legend(glyph, s, x_name):
    ys = [y for _, y in s.points]
    low = min(s.points, key=lambda p: p[1])
    return "  %s %s: %s -> %s (min %s at %s %s)" % (
        glyph, s.name, number(ys[0]), number(ys[-1]), number(low[1]), x_name, number(low[0]))


def number(v):
    """Short text of an axis or legend value: integers as such, others to 4 significant digits."""
    return "%d" % v if float(v).is_integer() and abs(v) < 1e15 else "%.4g" % v
