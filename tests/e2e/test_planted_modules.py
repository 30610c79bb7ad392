"""A `torch/` or `torchsh/` folder in the working directory is never imported in place of the real ones.

`python -m` puts the working directory first on sys.path. The daemon, its restart, help without a daemon
and the context forwarder are all started that way from the caller's working directory: run from inside a
PyTorch checkout (which has a `torch/` folder), or from a shared folder where another user left one, they
imported that folder's code and ran it as the user. Each plant here writes a marker file when imported.
"""
import os

import pytest


@pytest.fixture
def planted(tmp_path):
    work, marker = tmp_path / "work", tmp_path / "PLANTED"
    for name in ("torch", "torchsh"):
        (work / name).mkdir(parents=True)
        (work / name / "__init__.py").write_text(
            "open(%r, 'a').write(%r)\nraise SystemExit('the planted %s was imported')\n" % (str(marker), name, name))
    return str(work), marker


def test_the_daemon_started_and_restarted_from_a_folder_with_a_torch_package_imports_the_real_one(fresh_sh, planted):
    work, marker = planted
    sh = fresh_sh(start=False)
    r = sh.run("torch randn 2 && torch daemon restart && torch randn 3 | torch value", cwd=work)
    assert r.code == 0 and "[" in r.out, r.err
    assert not marker.exists(), marker.read_text()


def test_help_without_a_daemon_from_that_folder_imports_the_real_torchsh(fresh_sh, planted):
    work, marker = planted
    sh = fresh_sh(start=False)
    r = sh.run("torch help add", cwd=work)
    assert r.code == 0 and "usage: torch add" in r.out, r.err
    assert not marker.exists() and not os.path.exists(sh.socket)
