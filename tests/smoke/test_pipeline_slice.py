"""The fast tier's slice of the differential pipeline tests (tests/e2e/test_pipelines.py has the rest): the first
pipelines.FAST seeds, which mix every task, both data formats and the three standardizations, each run through
the shell (fit --val, predict, evaluate, serve, an ONNX export) and through plain PyTorch, and compared."""
import pytest

from support import pipelines
from support.pipelines_check import check


@pytest.mark.parametrize("seed", pipelines.FAST)
def test_a_pipeline_through_the_shell_gives_what_plain_pytorch_gives(sh, seed):
    check(sh, seed)
