"""Differential pipeline tests (issue 36, "one model, one meaning"): pipelines drawn from a seed
(tests/support/pipelines.py: CSV and npy data; class names, class indices, 0/1 and float targets; multiclass,
one-logit binary and regression heads; with and without standardization, --val on the raw split and on the
standardized one; linear and MLP heads, SGD and Adam, their losses and metrics) each run through the shell (fit
--val, predict, evaluate, serve, an ONNX export for every 8th) and through the same pipeline in plain PyTorch
(tests/support/pipelines_oracle.py), then compared (tests/support/pipelines_check.py). A failure prints the
pipeline as a bash script to rerun.

The fast tier runs pipelines.FAST (tests/smoke/test_pipeline_slice.py); this file the rest, marked slow."""
import pytest

from support import pipelines
from support.pipelines_check import check

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("seed", [s for s in range(pipelines.COUNT) if s not in pipelines.FAST])
def test_a_pipeline_through_the_shell_gives_what_plain_pytorch_gives(sh, seed):
    check(sh, seed)
