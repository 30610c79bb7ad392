"""Argument descriptions parsed from PyTorch-style docstrings (table/docargs.py)."""
import torch

from torchsh.table import docargs

DOC = """Does a thing.

Args:
    input (Tensor): the input tensor.
    other (Tensor or Number): the tensor or number to add to :attr:`input`,
        over two lines. Default: ``None``.
    a, b (int): two names, one text

Keyword args:
    alpha (Number, optional): the multiplier for :attr:`other` (default: 1)
    out (Tensor, optional): the output tensor.

Shape:
    - Input: :math:`(N, \\text{in\\_features})`

Example::

    >>> torch.add(a, b)
"""


def test_args_and_keyword_args_sections_give_one_line_per_argument():
    assert docargs.parse(DOC) == {
        "input": "the input tensor.",
        "other": "the tensor or number to add to input, over two lines.",  # the default is the help line's
        "a": "two names, one text", "b": "two names, one text",
        "alpha": "the multiplier for other",
        "out": "the output tensor.",
    }


def test_class_docs_without_types_and_latex_are_read():
    assert docargs.arg_docs(torch.nn.Conv2d)["in_channels"].startswith("Number of channels in the input image")
    found = docargs.arg_docs(torch.nn.functional.conv2d)  # `input: input tensor of shape :math:`(\text{minibatch}…`
    assert found["input"] == "input tensor of shape (minibatch , in_channels , iH , iW)"


def test_most_pytorch_rows_with_an_args_section_describe_their_arguments():
    from torchsh.table import from_torch
    rows = [r for r in from_torch.torch_ops() if "Args:" in (r.call.__doc__ or "")]
    described = [r for r in rows if r.arg_docs]
    assert len(described) >= 0.9 * len(rows), (len(described), len(rows))
    add = next(r for r in rows if r.name == "add")
    assert add.arg_docs["alpha"] == "the multiplier for other."
