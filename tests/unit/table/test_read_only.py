"""OpSpec.read_only: the ops and verbs that change no object, file, setting or generator (what `torch mcp
--read_only` admits), from ATen's own marks for PyTorch's ops (table/readonly.py) and @verb(read_only=True)."""
import pytest

from torchsh.table import build_table


@pytest.fixture(scope="module")
def table():
    return build_table()[0]


READ_ONLY = ("add", "matmul", "sum", "linalg.qr", "nn.functional.relu", "zeros", "arange", "T",  # computes: a new tensor
             "value", "shape", "print", "describe", "tensors", "ops", "nn.info", "job.list", "job.logs", "runs.ls",
             "history", "model.inspect", "daemon.status", "nn")  # reads; `nn` alone: its group listing
CHANGES = ("randn", "rand_like", "randint", "bernoulli", "multinomial", "normal", "poisson",  # draw from the generator
           "nn.functional.dropout", "nn.functional.dropout2d", "nn.functional.gumbel_softmax", "nn.functional.rrelu",
           "nn.functional.scaled_dot_product_attention", "nn.functional.batch_norm",  # running stats in training
           "nn.linear", "optim.sgd",  # class rows: a layer's init draws
           "fit", "nn.save", "backward", "step", "manual_seed", "free", "job.stop", "mcp", "scope",
           "job.poll",  # --interrupt stops the job
           "optim.lr", "requires_grad", "data.loader", "data.split")  # read, or set / draw when a flag says so


def _row(table, name):
    return table.ops.get(name) or table.resolve([name])[0]  # `nn`: the group's listing


def test_the_read_only_rows(table):
    assert [n for n in READ_ONLY if not _row(table, n).read_only] == []


def test_the_rows_that_change_state_or_draw(table):
    assert [n for n in CHANGES if _row(table, n).read_only] == []


def test_every_row_says_so_in_its_json(table):
    assert table.ops["add"].to_json()["read_only"] is True and table.ops["randn"].to_json()["read_only"] is False
