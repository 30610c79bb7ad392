"""`torch plot DIR|metrics.jsonl`: training metrics as a chart in the terminal, or a PNG with --png (a folder
of runs: each run under it, one series per run and key);
--confusion: the last epoch's confusion matrix instead (plot/confusion.py).

The terminal chart (plot/terminal.py) is Unicode text --width characters wide: the caller's
TORCHSH_COLUMNS when set (the client sends its terminal's width there when stdout is a terminal, the
bash fast path $COLUMNS), else 80. The PNG goes through matplotlib, an optional extra (`pip install 'torchsh[plot]'`).
"""
import os

from torchsh.contract import card as cards
from torchsh.errors import TorchshError, bad_argument
from torchsh.plot import confusion as confusion_matrix, series, terminal
from torchsh.plot.png import write_chart
from torchsh.results import Text
from torchsh.train.logs import runs
from torchsh.verbs import verb

DEFAULT_WIDTH, DEFAULT_HEIGHT = 80, 15


@verb("plot(Path[] source, *, str[]? y=None, str? x=None, OutPath? png=None, int? width=None, int? height=None, "
      "bool confusion=False) -> str",
      category="files",
      examples=("printf '%s\\n' '{\"kind\":\"step\",\"step\":1,\"loss\":2.0}' '{\"kind\":\"step\",\"step\":2,\"loss\":1.5}' "
                "'{\"kind\":\"step\",\"step\":3,\"loss\":0.75}' > metrics.jsonl && torch plot metrics.jsonl --width 60",
                "mkdir -p a b && printf '%s\\n' '{\"kind\":\"step\",\"step\":1,\"loss\":2.0}' '{\"kind\":\"step\",\"step\":2,\"loss\":1.0}' "
                "> a/metrics.jsonl && printf '%s\\n' '{\"kind\":\"step\",\"step\":1,\"loss\":1.5}' '{\"kind\":\"step\",\"step\":2,\"loss\":1.2}' "
                "> b/metrics.jsonl && torch plot a b --y loss --width 60"), read_only=True)
def plot(ctx, source, y=None, x=None, png=None, width=None, height=None, confusion=False):
    """Chart training metrics from `torch fit --log DIR` folders (DIR/metrics.jsonl) or metrics.jsonl files.

    Args:
        source: a run folder, a metrics.jsonl, or a folder of runs (every run under it, as `runs ls` finds them); several runs overlay: one series per run and --y key, named "RUN KEY" (RUN: its folder)
        y: the keys to draw (default loss, and val_loss when the file has it)
        x: step draws the step rows, epoch the epoch rows (default step when the file has step rows); a key only the other kind of row has is drawn from those rows at their step or epoch
        png: write an 800x500 PNG there (matplotlib) and print its path, instead of drawing in the terminal
        width: characters (default $TORCHSH_COLUMNS when exported, else the terminal's width when stdout is one, else 80)
        height: plot rows (default 15)
        confusion: draw the confusion matrix of the last epoch (val_confusion, else confusion) as a table, or a heatmap with --png
    """
    source = [run for s in source for run in _runs_in(s)]
    if confusion:
        if len(source) > 1:
            raise bad_argument("--confusion draws one run's matrix; %d were given" % len(source))
        return _confusion(source[0], png)
    if len(source) > 1:
        x_name, chosen = series.overlay(source, y, x)
    else:
        x_name, chosen = series.choose(series.read_rows(series.metrics_path(source[0])), y, x)
    if png is not None:
        write_chart(png, chosen, x_name)
        return Text(png + "\n")
    width = width if width is not None else _columns(ctx)
    return Text(terminal.render(chosen, x_name, width, height if height is not None else DEFAULT_HEIGHT))


def _runs_in(source):
    """A run folder or a metrics.jsonl as it is; a folder of runs (as `torch runs ls` and TensorBoard take it):
    the folder of each run under it that has metrics, in `runs ls`'s order."""
    if not os.path.isdir(source) or os.path.exists(series.metrics_path(source)):
        return [source]
    found = [path for _, path in runs.find(source, source) if os.path.exists(series.metrics_path(path))]
    if not found:
        raise TorchshError("no_runs", "%s holds no run with metrics (no metrics.jsonl at or under it)" % source,
                           "`torch fit … --log DIR` writes them")
    return found


def _confusion(source, png):
    path = series.metrics_path(source)
    key, epoch, matrix = confusion_matrix.last_matrix(series.read_rows(path))
    record = runs.read_record(os.path.join(os.path.dirname(path), "run.json"))  # the run's card names its classes
    names = cards.from_stored(record).get("classes")
    if png is None:
        return Text(confusion_matrix.render(key, epoch, matrix, names))
    confusion_matrix.write_png(png, key, epoch, matrix, names)
    return Text(png + "\n")


def _columns(ctx):
    text = ctx.env.get("TORCHSH_COLUMNS", "")
    if not text:
        return DEFAULT_WIDTH
    if not text.isdigit():
        raise bad_argument("TORCHSH_COLUMNS=%s is not a number of columns" % text[:20], "export TORCHSH_COLUMNS=$COLUMNS")
    return int(text)
