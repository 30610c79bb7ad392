"""The study's edges: Optuna missing (the extra to install), a storage URL that cannot be opened (the
caller's bad_argument, its password not shown)."""
import sys

import pytest

from torchsh.errors import TorchshError
from torchsh.sweep import study


def test_without_optuna_a_sweep_says_which_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)  # as if not installed
    with pytest.raises(TorchshError) as e:
        study.optuna()
    assert e.value.code == "missing_extra" and e.value.hint == "pip install 'torchsh[sweep]'"


def test_a_storage_that_cannot_be_opened_is_the_callers_bad_argument(tmp_path):
    class Ctx:
        def path(self, text, mode):
            return str(tmp_path / text)
    with pytest.raises(TorchshError) as e:
        study.storage(Ctx(), "postgresql://user:secret@localhost:1/db", None)
    assert e.value.code == "bad_argument" and "secret" not in e.value.message and "user:***@" in e.value.message
