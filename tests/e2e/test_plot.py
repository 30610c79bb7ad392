"""`torch plot`: a metrics.jsonl (as `torch fit --log DIR` writes it, made here by hand) drawn in the
terminal (shape, labels, where the extremes land) and as a PNG (size and pixels, read back with Pillow)."""
import fcntl
import json
import math
import os
import pty
import struct
import subprocess
import sys
import termios

import numpy as np
import pytest
from PIL import Image

from torchsh.errors import TorchshError

STEPS, PER_EPOCH = 200, 50
BRAILLE = range(0x2800, 0x2900)
TOP_LEFT_DOT, BOTTOM_RIGHT_DOT, BOTTOM_LEFT_DOT, TOP_RIGHT_DOT = 0x01, 0x80, 0x40, 0x08


def loss_at(step):
    return 2.0 * math.exp(-step / 60)  # strictly falling: the max is the first step, the min the last


def write_run(folder):
    """A fit log: a step row per step, an epoch row (val_loss, accuracy) every PER_EPOCH steps."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "metrics.jsonl"), "w") as f:
        for step in range(1, STEPS + 1):
            epoch = (step - 1) // PER_EPOCH + 1
            f.write(json.dumps({"kind": "step", "epoch": epoch, "step": step, "loss": loss_at(step),
                                "lr": 0.1, "seconds": 0.01}) + "\n")
            if step % PER_EPOCH == 0:
                f.write(json.dumps({"kind": "epoch", "epoch": epoch, "step": step, "loss": loss_at(step),
                                    "val_loss": loss_at(step) + 0.5, "accuracy": 0.5 + epoch / 10,
                                    "lr": 0.1, "seconds": 1.0}) + "\n")
    return folder


@pytest.fixture
def run_dir(sh):
    return write_run(sh.tmp("run"))


def plot_rows(text, height):
    return text.split("\n")[:height]


def cell_bits(ch):
    assert ord(ch) in BRAILLE, "expected a braille cell, got %r" % ch
    return ord(ch) - 0x2800


def test_terminal_chart_is_width_by_height_with_the_extremes_in_the_corners(sh, run_dir):
    out = sh("torch plot %s --width 60 --height 10" % run_dir)
    lines = out.split("\n")
    assert len(lines) == 10 + 2 + 2  # plot rows, axis, x labels, a legend line for loss and val_loss
    rows = plot_rows(out, 10)
    assert all(len(r) == 60 for r in rows)
    top, bottom = "%.4g" % loss_at(1), "%.4g" % loss_at(STEPS)
    label_width = max(len(top), len(bottom))
    assert rows[0].startswith(top.rjust(label_width) + " ┤") and rows[-1].startswith(bottom.rjust(label_width) + " ┤")
    first, last = label_width + 2, 59
    assert cell_bits(rows[0][first]) & TOP_LEFT_DOT          # loss at step 1 is the max: top-left dot
    assert cell_bits(rows[-1][last]) & BOTTOM_RIGHT_DOT      # loss at the last step is the min: bottom-right
    assert sum(r.count("×") for r in rows) == STEPS // PER_EPOCH  # val_loss: one marker per epoch row
    assert lines[10].strip().startswith("└") and lines[11].split() == ["1", "step", str(STEPS)]
    assert lines[12].startswith("  ⠒⠒ loss:") and lines[13].startswith("  ×  val_loss:")


def test_terminal_width_comes_from_TORCHSH_COLUMNS_else_80(sh, run_dir):
    wide = sh("torch plot %s" % run_dir, env={"TORCHSH_COLUMNS": "100"})
    plain = sh("torch plot %s" % run_dir)
    assert {len(r) for r in plot_rows(wide, 15)} == {100}
    assert {len(r) for r in plot_rows(plain, 15)} == {80}
    assert len(plain.split("\n")) == 15 + 2 + 2


def test_x_epoch_draws_the_epoch_rows_of_the_asked_key(sh, run_dir):
    out = sh("torch plot %s/metrics.jsonl --x epoch --y accuracy --width 40 --height 6" % run_dir)
    rows = plot_rows(out, 6)
    first = rows[0].index("┤") + 1
    assert rows[0].lstrip().startswith("0.9") and rows[-1].lstrip().startswith("0.6")  # accuracy max, min
    assert cell_bits(rows[-1][first]) & BOTTOM_LEFT_DOT and cell_bits(rows[0][-1]) & TOP_RIGHT_DOT  # rising
    assert out.split("\n")[7].split() == ["1", "epoch", "4"]
    assert out.split("\n")[8].startswith("  ⠒⠒ accuracy: 0.6 -> 0.9")


def test_png_is_800_by_500_with_both_curves_in_their_colours(sh, run_dir):
    png = sh.tmp("loss.png")
    assert sh("torch plot %s --png %s" % (run_dir, png)) == png
    image = Image.open(png).convert("RGB")
    assert image.size == (800, 500)
    pixels = np.asarray(image).reshape(-1, 3).astype(int)
    # matplotlib's first two colours (C0 blue, C1 orange): the loss and val_loss lines
    assert _near(pixels, (31, 119, 180)) > 300
    assert _near(pixels, (255, 127, 14)) > 50
    assert (pixels != 255).any(axis=1).sum() > 5000  # axes, labels, legend


def _near(pixels, colour, tolerance=30):
    return int((abs(pixels - np.array(colour)) <= tolerance).all(axis=1).sum())


def test_a_missing_matplotlib_is_missing_extra_naming_the_pip_extra(monkeypatch, tmp_path):
    from torchsh.plot import png, series
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)  # `import` of it now fails
    with pytest.raises(TorchshError) as err:
        png.write_chart(str(tmp_path / "x.png"), [series.Series("loss", [(1, 1.0)])], "step")
    assert err.value.code == "missing_extra" and "pip install 'torchsh[plot]'" in err.value.hint
    assert not os.listdir(tmp_path)


def test_a_key_no_row_has_is_bad_argument_listing_the_keys(sh, run_dir):
    r = sh.run("torch plot %s --y accuracy_top5" % run_dir)
    assert r.code == 2 and r.out == ""
    assert r.err.count("\n") == 1 and "[bad_argument]" in r.err and "val_loss" in r.err and "accuracy" in r.err


def test_a_damaged_line_is_a_file_error_naming_it_but_a_cut_last_line_is_skipped(sh, run_dir):
    path = os.path.join(run_dir, "metrics.jsonl")
    with open(path, "a") as f:
        f.write('{"kind": "step", "step": 201, "lo')  # a writer cut mid-row: the chart still draws
    assert sh("torch plot %s --width 50" % run_dir).split("\n")[-2].startswith("  ⠒⠒ loss:")
    with open(path, "a") as f:
        f.write("\n")
    r = sh.run("torch plot %s" % run_dir)
    assert r.code == 6 and "line %d is not JSON" % (STEPS + STEPS // PER_EPOCH + 1) in r.err and "[file_error]" in r.err


def test_no_metrics_file_is_a_file_error(sh):
    r = sh.run("torch plot %s" % sh.tmp("empty-folder"))
    assert r.code == 6 and "[file_error]" in r.err


def run_in_pty(sh, script, columns):
    """stdout of bash running script on a pty `columns` wide (stderr apart), as text."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    prelude = os.environ.get("TORCHSH_TEST_PRELUDE", "")
    p = subprocess.Popen(["bash", "-c", prelude + "\n" + script], stdout=slave, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, env=sh.env, cwd=sh.folder)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the last writer closed the pty
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert p.wait(timeout=120) == 0, p.stderr.read()
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_a_chart_on_a_terminal_is_as_wide_as_the_terminal(sh):
    folder = write_run(sh.tmp("run"))
    out = run_in_pty(sh, "COLUMNS=93; torch plot %s --height 5" % folder, 93)
    rows = out.split("\n")[:5]
    assert {len(r) for r in rows} == {93}, out
    assert {len(r) for r in sh("torch plot %s --height 5" % folder).split("\n")[:5]} == {80}  # a pipe: 80
