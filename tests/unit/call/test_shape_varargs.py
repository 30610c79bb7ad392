"""Sizes as separate words exactly where PyTorch takes them as varargs: the only positional argument is a
required int list (torch.zeros(2, 3)) or the only one after self (Tensor.reshape(2, 3))."""
import functools

import torch

from torchsh.call import bind, parse
from torchsh.table import build_table


@functools.lru_cache(maxsize=None)
def table():
    return build_table()[0]


def varargs_overloads():
    for op in table().ops.values():
        if not bind._takes_varargs(op):
            continue
        for ov in op.overloads:
            slots = [a for a in ov.args if not a.keyword_only]
            if bind._varargs_slot(slots) is not None:
                yield op, slots


def test_pytorch_takes_varargs_wherever_the_binder_does():
    refused = []
    for op, slots in varargs_overloads():
        try:
            if slots[0].kind == "tensor":
                getattr(torch.zeros(1, 1), op.name)(1, 0)
            else:
                getattr(torch, op.name)(1, 0)
        except TypeError as e:  # PyTorch's argument parser refused the varargs form
            refused.append("%s: %s" % (op.name, str(e).split("\n")[0]))
        except RuntimeError:
            pass  # read the varargs, then disliked the sizes (reshape(1, 0) of one element)
    assert not refused, refused


def test_the_usual_size_ops_take_varargs():
    names = {op.name for op, _ in varargs_overloads()}
    assert {"zeros", "ones", "rand", "randn", "empty", "reshape", "permute", "expand", "repeat", "flip",
            "tile", "squeeze"} <= names
    assert not {"full", "roll", "sum", "std", "randint", "zeros_like"} & names  # PyTorch refuses these


def binding_of(argv):
    op, fixed, words = table().resolve(argv)
    parsed = parse.split_argv(op, words, fixed)
    binding, _ = bind.choose(op, parsed.positionals, parsed.flags)
    return binding


def test_varargs_bind_as_one_size_list():
    b = binding_of(["zeros", "2", "3"])
    assert b.values["size"].value == [2, 3]
    b = binding_of(["reshape", "tensor://abc00001", "3", "2"])
    assert b.values["shape"].value == [3, 2]


def test_full_keeps_its_fill_value_after_the_size():
    b = binding_of(["full", "[2,3]", "1.5"])
    assert b.values["size"].value == [2, 3] and b.values["fill_value"].value == 1.5
    assert binding_of(["full", "2", "3", "1.5"]) is None
