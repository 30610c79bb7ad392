"""`torch nu-module --install`: torch.nu lands in the caller's Nushell scripts folder, made if missing, and
the printed `use` line (or the README's config.nu line) works in a real nu with a fresh HOME.

The session daemon runs with the test runner's HOME, so a fresh HOME that works proves the folder is the
caller's, not the daemon's.
"""
import json
import os
import subprocess

import torch

from nutools import ensure_nu
from torchsh import protocol



def _readme_lines():
    """The README's Nushell set-up lines (the indented block of its "## Nushell" section), comments cut."""
    with open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")) as f:
        section = f.read().split("## Nushell", 1)[1].split("\n## ", 1)[0]
    return tuple(ln.split("#")[0].strip() for ln in section.split("\n") if ln.startswith("    ") and ln.strip())


# The README's Nushell lines, run as they are written there (in nu each line is parsed when it runs).
README_LINES = _readme_lines()


def _env(sh, home, xdg=""):
    # an empty XDG_CONFIG_HOME counts as unset, for nu and for torch alike
    return dict(sh.env, HOME=str(home), XDG_CONFIG_HOME=str(xdg))


def _nu(sh, env, script, *flags):
    p = subprocess.run([ensure_nu(), *flags, "-c", script], capture_output=True, text=True, env=env,
                       cwd=sh.folder, timeout=180, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, "nu exit %d\n%s" % (p.returncode, p.stderr)
    return p.stdout


def test_install_writes_torch_nu_into_a_fresh_homes_scripts_folder_and_the_use_line_works(sh, tmp_path):
    env = _env(sh, tmp_path)
    line = sh("torch nu-module --install", env=env)
    target = tmp_path / ".config" / "nushell" / "scripts" / "torch.nu"
    assert line == "use torch.nu  # %s" % target
    assert target.read_text() == sh("torch nu-module") + "\n"
    got = _nu(sh, env, "%s\ntorch ones [2] | torch value | to json --raw" % line)
    assert json.loads(got) == torch.ones(2).tolist()


def test_readme_lines_work_on_a_fresh_nushell_config(sh, tmp_path):
    env = _env(sh, tmp_path)
    _nu(sh, env, README_LINES[0])
    got = _nu(sh, env, "%s\ntorch ones [2] | torch add 1 | torch value | to json --raw" % README_LINES[1])
    assert json.loads(got) == (torch.ones(2) + 1).tolist()


def test_printed_use_line_in_config_nu_gives_every_session_the_commands(sh, tmp_path):
    env = _env(sh, tmp_path)
    line = sh("torch nu-module --install", env=env)
    (tmp_path / ".config" / "nushell" / "config.nu").write_text(line + "\n")
    got = _nu(sh, env, "torch ones [3] | torch sum | torch item", "--login")
    assert got.strip() == "3.0"


def test_install_follows_xdg_config_home_as_nushell_does(sh, tmp_path):
    env = _env(sh, tmp_path / "home", xdg=tmp_path / "xdg")
    os.makedirs(tmp_path / "home")
    sh("torch nu-module --install", env=env)
    assert (tmp_path / "xdg" / "nushell" / "scripts" / "torch.nu").exists()
    assert not (tmp_path / "home" / ".config").exists()
    got = _nu(sh, env, "use torch.nu; torch zeros [1] | torch value | to json --raw")
    assert json.loads(got) == [0.0]


def test_install_into_an_unwritable_place_is_one_file_error_line(sh, tmp_path):
    (tmp_path / ".config").write_text("a file where the folder should be")
    r = sh.run("torch nu-module --install", env=_env(sh, tmp_path))
    assert r.code == protocol.exit_status("file_error") and r.out == ""
    assert r.err.count("\n") == 1 and r.err.startswith("torch: nu-module: ") and "[file_error]" in r.err


def test_install_through_the_fast_bash_function_uses_the_callers_home(sh, tmp_path):
    r = sh.run('eval "$(torch init bash)"; torch nu-module --install', env=_env(sh, tmp_path))
    assert r.code == 0, r.err
    assert (tmp_path / ".config" / "nushell" / "scripts" / "torch.nu").exists()
