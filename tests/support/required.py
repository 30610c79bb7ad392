"""What a test needs from the machine (zsh, fish, sshd…): a skip with the reason here, a failure in CI.

A shell test that skips in CI tests nothing, so where `CI` is set (CI sets CI=true; scripts/bootstrap.sh
--with-shells installs zsh, fish and openssh-server there as root) a missing tool fails the test instead.
CUDA is the exception: CI has no GPU, so the CUDA tests keep their plain skipif.
Use: `from support.required import require_tool, missing` (tests/ is on sys.path), at the start of the test or
fixture that needs the tool; the tests read the path it returns.
"""
import os
import shutil

import pytest


def in_ci():
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def missing(reason):
    """Skip the test with `reason`, or fail it with that reason under CI."""
    if in_ci():
        pytest.fail("%s (CI is set: a test that skips in CI tests nothing)" % reason, pytrace=False)
    pytest.skip(reason)


def require_tool(name, hint=None):
    """The path of the program `name` on PATH; without one, missing(…) with how to install it."""
    path = shutil.which(name)
    if path is None:
        hint = hint or "scripts/bootstrap.sh --with-shells installs it as root, or apt-get install %s" % name
        missing("%s is not installed (%s)" % (name, hint))
    return path
