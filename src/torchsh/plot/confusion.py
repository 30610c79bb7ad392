"""`torch plot --confusion`: the confusion matrix of a run's last epoch (`torch fit --metrics confusion`)
as a text table, or a PNG heatmap (matplotlib) with --png.

The matrix is val_confusion when the run validated, else the training pass's confusion: rows the target
class, columns the predicted one, class k at index k, labelled by its name when the run's run.json knows the
class names (the model card's `classes`), else by k.
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


def labels(matrix, names=None):
    """Each class's label: its name when the run knows one per class (run.json's card: `classes`), else its index."""
    if isinstance(names, list) and len(names) == len(matrix) and all(isinstance(n, str) for n in names):
        return list(names)
    return [str(k) for k in range(len(matrix))]


def render(key, epoch, matrix, names=None):
    """The matrix as right-aligned columns under a header of class labels (labels()), each row led by its class."""
    shown = labels(matrix, names)
    width = max(len(str(v)) for v in shown + [v for row in matrix for v in row])
    cell = "%" + str(width + 1) + "s"
    lines = [title(key, epoch), " " * (width + 2) + "".join(cell % c for c in shown)]
    lines += [cell % shown[k] + " " + "".join(cell % v for v in row) for k, row in enumerate(matrix)]
    return "\n".join(lines) + "\n"


def write_png(path, key, epoch, matrix, names=None):
    """A heatmap of the counts, each cell labelled with its count, the axes with the class labels."""
    fig = png.chart_figure()
    ax = fig.add_subplot()
    image = ax.imshow(matrix, cmap="Blues")
    fig.colorbar(image, ax=ax)
    top = max(max(row) for row in matrix)
    if len(matrix) <= 30:  # past that the labels overlap
        for k, row in enumerate(matrix):
            for c, v in enumerate(row):
                ax.text(c, k, str(v), ha="center", va="center", color="white" if v > top / 2 else "black")
    if len(matrix) <= 30:
        shown = labels(matrix, names)
        ax.set_xticks(range(len(matrix)), shown, rotation=45 if max(map(len, shown)) > 3 else 0)
        ax.set_yticks(range(len(matrix)), shown)
    ax.set_xlabel("predicted class")
    ax.set_ylabel("target class")
    ax.set_title("%s, epoch %s" % (key, epoch))
    fig.tight_layout()  # slanted class names need room below the axes
    png.save_figure(fig, path)
