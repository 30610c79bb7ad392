"""A second real uid for the tests that need two users (the daemon's peer check, planted sockets).

Root only: `other_user` creates a throwaway system user (or reuses one by that name) and removes
it at the end of the module that used it; anyone else gets a skip with the reason (a failure in CI,
which runs as root: tests/support/required.py). `run_as` runs a command as that user (no supplementary groups,
no login environment).
Use: `from support.twouid import other_user, run_as  # noqa: F401` in a test module (tests/ is on sys.path).
"""
import os
import pwd
import shutil
import subprocess

import pytest
from support.required import missing

NAME = "torchsh-other"


@pytest.fixture(scope="module")
def other_user():
    """(uid, gid) of a second real user."""
    if os.getuid() != 0:
        missing("needs root to create a second user (useradd); run as root to cover two uids")
    if not (shutil.which("useradd") and shutil.which("userdel")):
        missing("needs useradd and userdel to play a second user")
    created = False
    try:
        pw = pwd.getpwnam(NAME)
    except KeyError:
        p = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", NAME],
                           capture_output=True, text=True)
        if p.returncode != 0 and "already exists" not in p.stderr:  # a parallel user of this helper
            missing("useradd failed: %s" % p.stderr.strip())
        created = p.returncode == 0
        pw = pwd.getpwnam(NAME)
    try:
        yield pw.pw_uid, pw.pw_gid
    finally:
        if created:
            subprocess.run(["userdel", NAME], capture_output=True)


def run_as(user, argv, **kw):
    """subprocess.run(argv) as user=(uid, gid); captures text output unless told otherwise."""
    uid, gid = user

    def drop():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 60)
    return subprocess.run(argv, preexec_fn=drop, **kw)
