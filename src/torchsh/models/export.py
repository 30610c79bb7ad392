"""A model out as a file other runtimes run: `torch model export M FILE.onnx|FILE.pt2 --example SHAPE|TENSOR`.

- .onnx: PyTorch's dynamo exporter (torch.onnx.export(dynamo=True)), the weights inside the one file (no
  FILE.onnx.data beside it, so a model over protobuf's 2 GB is refused: .pt2 takes it). The written file
  is run by onnxruntime on the example before it takes FILE's name; a max |Δ| against the model in PyTorch
  over --tolerance refuses it and writes nothing. Without onnxruntime (the `export` extra) nothing is
  checked, and a warning says so.
- .pt2: torch.export.export, then torch.export.save; checked the same way through the program's module().
The model is exported in eval mode (its mode restored after). The example is a tensor handle, or a shape:
then normal noise from a generator of its own (the caller's RNG untouched) in the dtype and device of the
model's parameters. --dynamic DIM,… lets those dims take any size (torch.export.Dim.DYNAMIC; a dim of
size 1 too, as the ONNX exporter allows). Saves are atomic (fileio.atomic_write). torch.export's refusals
(data-dependent control flow, an op it cannot trace) are one torch_error line.
A model with a card (contract/card.py) is exported with its preprocessing in front of it (preprocessed.py):
the graph takes the raw rows `torch predict` takes, its input named after the card's field, its outputs
"output", the card's columns and classes in its metadata (an .onnx's metadata_props, a .pt2's extra file
metadata.json), and the check compares it with the wrapped model. raw: the bare model, and a warning that
says what its inputs need first.
"""
import contextlib
import json
import logging
import os
import re
import time
import warnings

import torch

from torchsh import fileio
from torchsh.contract import card as cards
from torchsh.errors import TorchshError, bad_argument, from_torch_exception
from torchsh.models import preprocessed

FORMATS = (".onnx", ".pt2")
ONNX_MAX_BYTES = 2 << 30  # protobuf's limit on one message: larger weights need external data files
EXTRA = "pip install 'torchsh[export]'"
PT2_METADATA = "metadata.json"  # torch.export.load(FILE, extra_files={"metadata.json": ""}) reads it


def export(model, path, example, dynamic=None, tolerance=1e-5, raw=False):
    """Write the model to path (.onnx or .pt2) traced on example (a tensor, or a shape), its card's
    preprocessing baked in unless raw; {file, format, seconds, example, dynamic, baked, checked_with,
    max_abs_diff}. TorchshError for every refusal."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise bad_argument("model export writes .onnx or .pt2 files, not %s" % os.path.basename(path),
                           "name the file MODEL.onnx (onnxruntime and other runtimes) or MODEL.pt2 (torch.export)")
    if not tolerance >= 0:
        raise bad_argument("--tolerance %g: not below 0" % tolerance, "the largest |Δ| accepted, e.g. 1e-4")
    x = example_input(model, example)
    model, labels = _labelled(model, x, raw, os.path.basename(path))
    dynamic = [dynamic] if isinstance(dynamic, int) else list(dynamic or ())
    shapes = dynamic_shapes(x, dynamic)
    started = time.perf_counter()
    with eval_mode(model), torch.no_grad():
        want = flat(_forward(model, x, shaped=not isinstance(example, torch.Tensor)))
        if labels:
            labels["outputs"] = ["output"] if len(want) == 1 else ["output_%d" % i for i in range(len(want))]
        if ext == ".onnx":
            checked, delta = _write_onnx(model, path, x, shapes, want, tolerance, labels)
        else:
            checked, delta = _write_pt2(model, path, x, shapes, want, tolerance, labels)
    return dict(file=path, format=ext[1:], seconds=round(time.perf_counter() - started, 3), example=list(x.shape),
                dynamic=sorted({d % x.dim() for d in dynamic}), baked=labels["baked"] if labels else [],
                checked_with=checked, max_abs_diff=delta)


def _labelled(model, x, raw, name):
    """(the module to export, {input, baked, metadata} or None): a model with a card has its preprocessing baked in
    front of it and its graph labelled from the card; a bare one (no card, or raw) is exported as it is."""
    card = cards.of_model(model)
    if not card:
        return model, None
    if raw:
        if card.get("preprocessing"):
            warnings.warn(preprocessed.raw_note(card, name))
        return model, None
    wrapped, baked = preprocessed.wrap(model, card, x)
    return wrapped, dict(input=preprocessed.input_name(card), baked=baked, metadata=preprocessed.metadata(card, baked))


def memory_needed(model, example):
    """What an export may take at its peak beyond what is held: ~4x the weights (measured: a 95 MiB MLP
    peaked 260 MiB over them for .pt2, 380 MiB for .onnx with onnxruntime's copy), and the example twice."""
    held = list(model.parameters()) + list(model.buffers())
    weights = sum(t.numel() * t.element_size() for t in held)
    if isinstance(example, torch.Tensor) or not held:
        return 4 * weights
    shape = [example] if isinstance(example, int) else list(example)
    count = 1
    for n in shape:
        count *= max(n, 0)
    return 4 * weights + 2 * count * held[0].element_size()


def example_input(model, example):
    """The tensor to trace with: the one given, or normal noise of the shape given, in the parameters'
    dtype and device, from a generator seeded 0 (the same example every time, the global RNG untouched)."""
    if isinstance(example, torch.Tensor):
        return example
    shape = [example] if isinstance(example, int) else list(example)
    if not shape or any(n <= 0 for n in shape):
        raise bad_argument("--example %s: a shape of positive sizes, e.g. 1,3,224,224" % ",".join(map(str, shape)),
                           "or a tensor handle: --example $(torch randint 0 100 [1,16])")
    first = next(model.parameters(), None)
    dtype, device = (first.dtype, first.device) if first is not None else (torch.float32, torch.device("cpu"))
    if not dtype.is_floating_point:
        raise bad_argument("--example SHAPE makes %s noise: the model's parameters are %s" % ("float", dtype),
                           "give the example as a tensor handle: --example $(torch …)")
    generator = torch.Generator(device).manual_seed(0)
    return torch.randn(shape, dtype=dtype, device=device, generator=generator)


def _forward(model, x, shaped):
    """The model's outputs on x in PyTorch, the reference; a failure on noise of a shape says what to give."""
    try:
        return model(x)
    except (RuntimeError, ValueError, TypeError, IndexError) as e:
        err = from_torch_exception(e)
        if shaped:
            err.hint = "--example %s gave the model %s noise of that shape; a model that wants other input (token " \
                       "ids) takes a tensor: --example $(torch randint 0 100 [1,16])" % (
                           ",".join(map(str, x.shape)), str(x.dtype).replace("torch.", ""))
        raise err from None


def dynamic_shapes(x, dims):
    """torch.export's dynamic_shapes for one input: each dim named in dims of any size; None for none."""
    if not dims:
        return None
    for d in dims:
        if not -x.dim() <= d < x.dim():
            raise bad_argument("--dynamic %d: the example has %d dims" % (d, x.dim()),
                               "name dims of the example's shape %s, e.g. --dynamic 0 for the batch" % list(x.shape))
    return ({d % x.dim(): torch.export.Dim.DYNAMIC for d in dims},)


@contextlib.contextmanager
def eval_mode(model):
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


@contextlib.contextmanager
def exporting(what):
    """torch.export's failures as one torch_error line; its warnings (deprecations inside PyTorch, its
    guards' chatter) are its own business, not the caller's. A dim of size 1 may still be dynamic: the
    ONNX exporter's own setting (backed_size_oblivious), for .pt2 too."""
    from torch.fx.experimental import _config as fx_config
    try:
        with warnings.catch_warnings(), fx_config.patch(backed_size_oblivious=True):
            warnings.simplefilter("ignore")
            yield
    except (TorchshError, MemoryError):  # MemoryError: invoke makes it out_of_memory
        raise
    except Exception as e:  # noqa: BLE001 - the exporter raises anything (UserError, Unsupported, asserts)
        raise TorchshError("torch_error", "%s cannot export this model: %s" % (what, _reason(e)),
                           "torch.export traces forward() once: a size the model fixes cannot be --dynamic, and "
                           "data-dependent branches (`if x.sum() > 0`) cannot be exported") from None


def _reason(exc):
    """The first line of what torch.export said: the ONNX exporter wraps it (its cause) in a banner."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    lines = [_ANSI.sub("", line).strip() for line in str(exc).split("\n")]
    return (next((line for line in lines if line), type(exc).__name__))[:300]


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def flat(outputs):
    """A forward's tensors in order: a tensor, or the tensors of a tuple, list or dict (nested)."""
    if isinstance(outputs, torch.Tensor):
        return [outputs]
    if isinstance(outputs, dict):
        outputs = list(outputs.values())
    if isinstance(outputs, (list, tuple)):
        return [t for o in outputs for t in flat(o)]
    return []


def max_abs_diff(got, want):
    """The largest |got - want| over every output (inf when they differ in number or shape)."""
    if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
        return float("inf")
    diffs = [(g.double() - w.detach().cpu().double()).abs().max().item() for g, w in zip(got, want) if w.numel()]
    return max(diffs, default=0.0)


def _check(delta, tolerance, path, checked_with):
    if not delta <= tolerance:  # NaN refuses too
        raise TorchshError("torch_error", "%s run by %s differs from the model in PyTorch: max |Δ| = %.3g > %g; "
                           "nothing was written" % (os.path.basename(path), checked_with, delta, tolerance),
                           "--tolerance %g accepts it, if that is close enough for you" % (delta * 2))


def _write_pt2(model, path, x, shapes, want, tolerance, labels):
    with exporting("torch.export"):
        program = torch.export.export(model, (x,), dynamic_shapes=shapes)
        delta = max_abs_diff(flat(program.module()(x)), want)
    _check(delta, tolerance, path, "torch.export")
    extra = {PT2_METADATA: json.dumps(labels["metadata"])} if labels else None
    fileio.atomic_write(path, lambda tmp: torch.export.save(program, tmp, extra_files=extra))
    return "torch.export", delta


def _write_onnx(model, path, x, shapes, want, tolerance, labels):
    _need_onnx()
    size = sum(t.numel() * t.element_size() for t in list(model.parameters()) + list(model.buffers()))
    if size >= ONNX_MAX_BYTES:
        raise TorchshError("too_large", "the model's weights are %.1f GiB: ONNX keeps them in one protobuf of at "
                           "most 2 GiB" % (size / (1 << 30)), "export it as a .pt2 (torch.export) instead")
    for name in ("onnxscript", "onnx_ir"):  # their optimizer's INFO notes, a dozen an export, in the daemon's log
        logging.getLogger(name).setLevel(logging.WARNING)
    with exporting("the ONNX exporter"):
        names = dict(input_names=[labels["input"]], output_names=labels["outputs"]) if labels else {}
        program = torch.onnx.export(model, (x,), dynamo=True, dynamic_shapes=shapes, verbose=False, **names)
    if labels:  # ONNX's metadata_props are strings: a list as JSON
        program.model.metadata_props.update({key: value if isinstance(value, str) else json.dumps(value)
                                             for key, value in labels["metadata"].items()})
    checked = []

    def write(tmp):
        program.save(tmp, external_data=False)
        checked.extend(_run_onnxruntime(tmp, x, want, path))
        if checked:
            _check(checked[1], tolerance, path, checked[0])
    fileio.atomic_write(path, write)
    return (checked[0], checked[1]) if checked else (None, None)


def _need_onnx():
    try:
        import onnx  # noqa: F401 - torch.onnx's dynamo exporter imports both
        import onnxscript  # noqa: F401
    except ImportError:
        raise TorchshError("missing_extra", "exporting ONNX needs onnx and onnxscript, which are not installed",
                           EXTRA) from None


def _run_onnxruntime(tmp, x, want, path):
    """("onnxruntime", max |Δ|) of the ONNX file tmp (to be path) run on x against want; () without onnxruntime."""
    try:
        import onnxruntime
    except ImportError:
        warnings.warn("%s not checked: onnxruntime is not installed (%s)" % (os.path.basename(path), EXTRA))
        return ()
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3  # errors only: its graph-optimizer notes are not the caller's business
    try:
        session = onnxruntime.InferenceSession(tmp, options, providers=["CPUExecutionProvider"])
        got = session.run(None, {session.get_inputs()[0].name: x.detach().cpu().numpy()})
    except Exception as e:  # noqa: BLE001 - onnxruntime's own exception types (Fail, InvalidGraph…)
        raise TorchshError("torch_error", "onnxruntime cannot run the exported %s: %s; nothing was written"
                           % (os.path.basename(path), fileio.first_line(e))) from None
    return "onnxruntime", max_abs_diff([torch.from_numpy(o) for o in got], want)
