"""Fixtures for the shell-integration tests: a real Nushell running torch.nu against the session daemon.

Nushell 0.115.1 comes from the npm registry into .tools/nu (git-ignored; scripts/bootstrap.sh
--with-shells does the same). If it is missing, the set-up installs it with npm; if that fails the
tests FAIL: the Nushell module is part of the product, so a run without nu is not a pass.
"""
import pytest

from nutools import Nu


@pytest.fixture(scope="session")
def nu(sh):
    return Nu(sh)
