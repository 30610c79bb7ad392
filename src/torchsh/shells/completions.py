"""TAB completion scripts for bash, zsh and fish: `torch completions bash|zsh|fish`.

Each script is thin on purpose: it hands the words typed so far to `torch __complete -- WORDS…`
(shells/complete.py, in the daemon) and shows what comes back. The daemon holds the op table
(~900 rows with their flags, and it follows the installed PyTorch) and the live handles, so nothing
is embedded that could go stale; the cost is one client call per TAB. The scripts are the files beside
this module (torch.bash, _torch, torch.fish): one copy each, printed as they are, or installed from there.
"""
import os

from torchsh.errors import bad_argument

FILES = {"bash": "torch.bash", "zsh": "_torch", "fish": "torch.fish"}  # beside this module


def script(shell):
    """The text of SHELL's completion script, as its file holds it."""
    if shell not in FILES:
        raise bad_argument("no completion script for shell %r" % shell, "use bash, zsh or fish (nu: torch nu-module)")
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), FILES[shell])) as f:
        return f.read()
