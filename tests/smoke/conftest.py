"""The smoke tier's `nu`: a real Nushell with torch.nu loaded, as tests/shells has it (nutools lives there)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "shells"))
from nutools import Nu  # noqa: E402


@pytest.fixture(scope="session")
def nu(sh):
    return Nu(sh)
