"""PNG files: a metrics chart through matplotlib (extra `plot`), a tensor as an image through Pillow
(extra `images`). Both are imported here, when a PNG is asked for, never at the daemon's start, and
written atomically (fileio.atomic_write: temp file, fsync, rename).
"""
import torch

from torchsh import fileio
from torchsh.errors import TorchshError, bad_argument
from torchsh.vocab import dtype_name

CHART_SIZE_PX = (800, 500)    # a chart PNG's width and height
_DPI = 100
IMAGE_CHANNELS = (1, 3, 4)   # grayscale, RGB, RGBA


def missing_extra(package, extra, what):
    return TorchshError("missing_extra", "%s needs %s, which is not installed" % (what, package),
                        "pip install 'torchsh[%s]'" % extra)


def chart_figure():
    """An 800×500 matplotlib Figure of its own, not pyplot's: no global figure state shared between requests."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise missing_extra("matplotlib", "plot", "--png") from None
    fig = Figure(figsize=(CHART_SIZE_PX[0] / _DPI, CHART_SIZE_PX[1] / _DPI), dpi=_DPI)
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig, path):
    fileio.atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=_DPI))


def write_chart(path, series, x_name):
    """The series as lines (markers where a series has few points) on one axes, saved as a PNG."""
    fig = chart_figure()
    ax = fig.add_subplot()
    for s in series:
        xs, ys = [p[0] for p in s.points], [p[1] for p in s.points]
        ax.plot(xs, ys, label=s.name, marker="o" if len(xs) <= 50 else None, markersize=3)
    ax.set_xlabel(x_name)
    ax.grid(True, alpha=0.3)
    ax.legend()
    save_figure(fig, path)


def image_array(t):
    """A 2-D (H×W) or 3-D (C×H×W, C in 1, 3, 4) uint8 tensor, or float in [0, 1], as an H×W(×C) uint8 array.

    Floats become round(v·255), as torchvision's to_pil_image does (its mul(255) then byte() truncates;
    rounding keeps 0.5/255 steps symmetric). Out-of-range or non-finite floats are an error, not clipped.
    """
    t = t.detach().cpu()
    if t.dim() == 3 and t.shape[0] in IMAGE_CHANNELS:
        t = t.permute(1, 2, 0) if t.shape[0] > 1 else t[0]
    elif t.dim() != 2:
        raise TorchshError("shape_mismatch", "an image is H×W or C×H×W with C in 1, 3, 4; this tensor is %s"
                           % list(t.shape), "torch permute T 2 0 1 turns H×W×C into C×H×W")
    if t.dtype == torch.uint8:
        return t.contiguous().numpy()
    if not t.dtype.is_floating_point:
        raise TorchshError("dtype_error", "an image tensor is uint8 or float in [0, 1], this one is %s"
                           % dtype_name(t.dtype), "torch to T --dtype uint8")
    t = t.float()
    if not bool(torch.isfinite(t).all()) or (t.numel() and (t.min() < 0 or t.max() > 1)):
        raise bad_argument("a float image holds values in [0, 1]; this one has values outside it",
                           "torch clamp T --min 0 --max 1, or divide by 255")
    return (t * 255).round().to(torch.uint8).contiguous().numpy()


def write_image(path, t):
    """The tensor as a grayscale, RGB or RGBA PNG (8 bits a channel)."""
    try:
        from PIL import Image
    except ImportError:
        raise missing_extra("Pillow", "images", "--format png") from None
    image = Image.fromarray(image_array(t))  # uint8 H×W -> L, H×W×3 -> RGB, H×W×4 -> RGBA
    fileio.atomic_write(path, lambda tmp: image.save(tmp, format="PNG"))
