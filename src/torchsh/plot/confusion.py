"""`torch plot --confusion`: the confusion matrix of a run's last epoch (`torch fit --metrics confusion`)
as a text table, or a PNG heatmap (matplotlib) with --png.

The matrix is val_confusion when the run validated, else the training pass's confusion: rows the target
class, columns the predicted one, class k at index k.
"""
from torchsh.errors import bad_argument
from torchsh.plot import png

KEYS = ("val_confusion", "confusion")   # the first one the file holds is drawn


def last_matrix(rows):
    """(key, epoch, matrix) of the last row holding a confusion matrix."""
    for key in KEYS:
        holding = [r for r in rows if _is_matrix(r.get(key))]
        if holding:
            return key, holding[-1].get("epoch"), holding[-1][key]
    raise bad_argument("no rows hold a confusion matrix",
                       "log one with `torch fit … --metrics confusion --log DIR`")


def _is_matrix(value):
    return (isinstance(value, list) and value and all(isinstance(r, list) and len(r) == len(value) for r in value)
            and all(isinstance(v, int) and not isinstance(v, bool) for r in value for v in r))


def title(key, epoch):
    return "%s, epoch %s (rows: target class, columns: predicted class)" % (key, epoch)


def render(key, epoch, matrix):
    """The matrix as right-aligned columns under a header of class indices, each row led by its class."""
    width = max(len(str(v)) for v in [len(matrix) - 1] + [v for row in matrix for v in row])
    cell = "%" + str(width + 1) + "s"
    lines = [title(key, epoch), " " * (width + 2) + "".join(cell % c for c in range(len(matrix)))]
    lines += [cell % k + " " + "".join(cell % v for v in row) for k, row in enumerate(matrix)]
    return "\n".join(lines) + "\n"


def write_png(path, key, epoch, matrix):
    """A heatmap of the counts, each cell labelled with its count."""
    fig = png.chart_figure()
    ax = fig.add_subplot()
    image = ax.imshow(matrix, cmap="Blues")
    fig.colorbar(image, ax=ax)
    top = max(max(row) for row in matrix)
    if len(matrix) <= 30:  # past that the labels overlap
        for k, row in enumerate(matrix):
            for c, v in enumerate(row):
                ax.text(c, k, str(v), ha="center", va="center", color="white" if v > top / 2 else "black")
    ax.set_xlabel("predicted class")
    ax.set_ylabel("target class")
    ax.set_title("%s, epoch %s" % (key, epoch))
    png.save_figure(fig, path)
