"""A served model's tensor shapes: what its V2 metadata (GET /v2/models/NAME) says, and the check each request's
input meets when `torch serve --input_shape` declares one sample's shape.

KServe V2 metadata gives every tensor a shape, -1 for a size that varies. Of a bare model nothing is known but
that its first dimension is the batch's: [-1]. With --input_shape the input is [-1, *input_shape], and the
outputs' shapes are found by running the model once on a sample of zeros when `torch serve` starts: a shape the
model does not take is refused there, in PyTorch's words, not at every request. Clients that build requests
from the metadata (Triton's perf_analyzer, generated clients) then need no shapes of their own.
"""
import math

import torch

from torchsh import memory
from torchsh.errors import bad_argument
from torchsh.serve import batcher


class Shapes:
    """Rows' shapes (no batch dimension): the input's, declared, and each output's, measured; None: unknown."""

    def __init__(self, input_row=None, output_rows=None):
        self.input_row, self.output_rows = input_row, output_rows

    def metadata(self, datatype):
        """(inputs, outputs) of the V2 model metadata; DATATYPE where no output was measured."""
        if self.input_row is None:
            return ([{"name": "input__0", "datatype": datatype, "shape": [-1]}],
                    [{"name": "output__0", "datatype": datatype, "shape": [-1]}])
        return ([{"name": "input__0", "datatype": datatype, "shape": [-1, *self.input_row]}],
                [{"name": "output__%d" % i, "datatype": kind, "shape": [-1, *row]}
                 for i, (row, kind) in enumerate(self.output_rows)])

    def check(self, request):
        """Refuse (bad_argument: 400) a request whose input is not rows of the declared shape."""
        if self.input_row is None:
            return
        got = [list(i.shape[1:]) for i in request.inputs]
        if got != [list(self.input_row)]:
            raise bad_argument("the model takes one input of rows %s (--input_shape), not %s"
                               % (list(self.input_row), got if len(got) != 1 else got[0]),
                               "send \"shape\": [N, %s]" % ", ".join(map(str, self.input_row)))


def declared(model, input_shape, budget=None):
    """Shapes of MODEL given one sample's INPUT_SHAPE: its outputs measured on a sample of zeros (eval mode,
    inference mode), in the model's dtype and on its device; the sample first admitted by BUDGET (the
    daemon's memory.Budget), so a shape too big to hold is refused before it is allocated."""
    if input_shape is None:
        return Shapes()
    if not input_shape or any(d < 1 for d in input_shape):
        raise bad_argument("--input_shape %s: one sample's sizes, each at least 1" % list(input_shape),
                           "e.g. --input_shape '[1,28,28]' for MNIST images (the batch dimension is not in it)")
    first = next(model.parameters(), None)
    dtype, device = (first.dtype, first.device) if first is not None else (torch.float32, torch.device("cpu"))
    if budget is not None and device.type == "cpu":
        budget.admit_bytes(math.prod(input_shape) * torch.empty((), dtype=dtype).element_size())
    put_back = batcher.evaluating(model)
    try:
        with torch.inference_mode():
            out = model(torch.zeros((1, *input_shape), dtype=dtype, device=device))
    except (RuntimeError, ValueError, TypeError, IndexError) as e:  # PyTorch's words: which sizes disagree
        oom = memory.allocation_failure(e)  # the sample or the forward did not fit: out_of_memory, not a shape
        if oom is not None:
            raise oom from None
        raise bad_argument("--input_shape %s does not fit the model: %s" % (list(input_shape), _first_line(e)),
                           "give one sample's shape, without the batch dimension") from None
    finally:
        put_back()
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    if not outs or not all(isinstance(o, torch.Tensor) and o.dim() > 0 and o.shape[0] == 1 for o in outs):
        raise bad_argument("the model's output on one sample of --input_shape %s is not tensors of one row"
                           % list(input_shape), "serve a model whose outputs keep the batch dimension")
    return Shapes(tuple(input_shape), [(tuple(o.shape[1:]), batcher.DATATYPES.get(o.dtype, "FP32")) for o in outs])


def _first_line(exc):
    return str(exc).strip().split("\n")[0] or type(exc).__name__
