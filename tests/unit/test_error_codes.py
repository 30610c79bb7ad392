"""from_torch_exception on PyTorch's own messages: every message about shapes is shape_mismatch, messages
about dtypes stay dtype_error, and an index value outside a tensor is not called a shape problem."""
import warnings

import pytest
import torch
import torch.nn.functional as F

from torchsh.errors import from_torch_exception

v, m, sq = torch.ones(3), torch.ones(2, 3), torch.ones(3, 3)

SHAPE_ERRORS = {  # each raises a message about shapes in PyTorch 2.13
    "mm of two 1-D tensors": lambda: torch.mm(v, v),                       # self must be a matrix
    "mm of 2x3 and 2x3": lambda: torch.mm(m, m),                           # mat1 and mat2 shapes cannot be multiplied
    "matmul of a 0-D tensor": lambda: torch.matmul(torch.tensor(1.0), v),  # need to be at least 1D
    "bmm of 2-D tensors": lambda: torch.bmm(m, m),                         # batch1 must be a 3D tensor
    "bmm of unfit batches": lambda: torch.bmm(torch.ones(2, 2, 3), torch.ones(2, 2, 3)),
    "mv": lambda: torch.mv(m, torch.ones(2)),                              # size mismatch, got input (2)…
    "dot of unequal vectors": lambda: torch.dot(v, torch.ones(4)),         # inconsistent tensor size
    "dot of matrices": lambda: torch.dot(m, m),                            # 1D tensors expected, but got 2D
    "add of unbroadcastable": lambda: m + torch.ones(4),
    "reshape": lambda: m.reshape(4),                                       # shape '[4]' is invalid for input of size 6
    "view of a transposed tensor": lambda: m.t().view(6),
    "cat of unequal rows": lambda: torch.cat([m, torch.ones(2, 4)]),
    "cat of different ranks": lambda: torch.cat([m, v]),
    "stack of unequal sizes": lambda: torch.stack([m, sq]),
    "linear": lambda: F.linear(m, torch.ones(2, 4)),
    "conv2d of a matrix": lambda: F.conv2d(m, torch.ones(1, 1, 2, 2)),     # Expected 3D (unbatched) or 4D…
    "conv2d channels": lambda: F.conv2d(torch.ones(1, 2, 4, 4), torch.ones(1, 1, 2, 2)),
    "conv1d kernel too big": lambda: F.conv1d(torch.ones(1, 3, 2), torch.ones(1, 3, 5)),
    "cross_entropy batch sizes": lambda: F.cross_entropy(m, torch.ones(3).long()),
    "inv of a non-square matrix": lambda: torch.linalg.inv(m),             # must be batches of square matrices
    "inv of a vector": lambda: torch.linalg.inv(v),                        # must have at least 2 dimensions
    "solve": lambda: torch.linalg.solve(sq, torch.ones(4)),
    "expand": lambda: m.expand(3, 3),
    "expand to fewer dims": lambda: m.expand(3),
    "permute": lambda: m.permute(0),
    "transpose out of range": lambda: m.transpose(0, 2),                   # Dimension out of range
    "gather": lambda: torch.gather(m, 1, torch.zeros(3, 3).long()),
    "broadcast_to": lambda: torch.broadcast_to(m, (4, 3)),
    "repeat": lambda: m.repeat(2),
    "split sizes": lambda: torch.split(m, [1, 1], 1),
    "unflatten": lambda: m.unflatten(1, (2, 2)),
    "layer_norm": lambda: F.layer_norm(m, [4]),
    "batch_norm stats": lambda: F.batch_norm(m, torch.ones(4), torch.ones(4)),
    "embedding weight": lambda: F.embedding(torch.tensor([1]), torch.ones(3)),  # 'weight' must be 2-D
    "outer of matrices": lambda: torch.outer(m, v),
    "einsum": lambda: torch.einsum("ij,jk->ik", m, m),
    "pad too long": lambda: F.pad(m, [1] * 10),
    "max_pool2d output too small": lambda: F.max_pool2d(torch.ones(1, 1, 1, 1), 3),
    "interpolate of a matrix": lambda: F.interpolate(m, size=4),
    "trace of a vector": lambda: torch.trace(v),
    "diag of 3-D": lambda: torch.diag(torch.ones(2, 2, 2)),
    "tril of a vector": lambda: torch.tril(v),
    "matrix_power": lambda: torch.linalg.matrix_power(m, 2),
    "bilinear": lambda: F.bilinear(m, m, torch.ones(2, 4, 4)),
    "lstm input size": lambda: torch.nn.LSTM(3, 4)(torch.ones(2, 2, 5)),
    "view_as_complex": lambda: torch.view_as_complex(m),
    "take_along_dim": lambda: torch.take_along_dim(m, torch.zeros(2, 2, 2).long(), 1),
    "pixel_shuffle": lambda: F.pixel_shuffle(torch.ones(1, 3, 2, 2), 2),
    "group_norm": lambda: F.group_norm(torch.ones(2, 3, 4), 2),
}

OTHER_ERRORS = {  # not about shapes
    "mean of integers": (lambda: torch.mean(torch.ones(2, dtype=torch.long)), "dtype_error"),
    "mm of float and double": (lambda: torch.mm(m, torch.ones(3, 2, dtype=torch.float64)), "dtype_error"),
    "index past the end": (lambda: m[5], "torch_error"),
    "select past the end": (lambda: m.select(0, 5), "torch_error"),
    "topk k too big": (lambda: m.topk(5), "torch_error"),
    "backward of a non-scalar": (lambda: torch.ones(2, requires_grad=True).mul(2).backward(), "autograd_error"),
}


def _raised(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - whatever PyTorch raises is the input under test
            return e
    raise AssertionError("PyTorch raised nothing")


@pytest.mark.parametrize("case", sorted(SHAPE_ERRORS))
def test_pytorch_shape_messages_are_shape_mismatch(case):
    exc = _raised(SHAPE_ERRORS[case])
    err = from_torch_exception(exc)
    assert err.code == "shape_mismatch", str(exc)
    assert err.message == str(exc).strip().split("\n")[0]  # PyTorch's own first line is kept


@pytest.mark.parametrize("case", sorted(OTHER_ERRORS))
def test_other_pytorch_messages_keep_their_code(case):
    fn, code = OTHER_ERRORS[case]
    exc = _raised(fn)
    assert from_torch_exception(exc).code == code, str(exc)
