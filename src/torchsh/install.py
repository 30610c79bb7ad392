"""Write the `torch` and `torchd` launchers into the interpreter's bin folder.

`torch` is the bash/Python launcher of shells/launcher.py: bash speaks the daemon's fast path, and runs this
interpreter with `-IS` on the same file when it cannot; the Python part puts the package folder on sys.path
itself, since -S skips site. A pip console-script wrapper would cost ~15 ms per command.

For the editable dev tree (scripts/bootstrap.sh runs it after `pip install -e`). A wheel (`pip install .`,
`pipx install .`) carries its own pair, scripts/launchers/, which pip installs with no further step.
"""
import os
import stat
import sys

import torchsh
from torchsh.shells import launcher

DAEMON = """#!{python}
import sys
from torchsh.daemon.main import main
sys.exit(main())
"""


def install(bin_dir=None):
    bin_dir = bin_dir or os.path.dirname(sys.executable)
    python = sys.executable
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(torchsh.__file__)))
    written = []
    bash = "/bin/bash" if os.access("/bin/bash", os.X_OK) else None  # else sh starts no bash: the client runs
    for name, text in (("torch", launcher.dev(python, package_root, bash)), ("torchd", DAEMON.format(python=python))):
        path = os.path.join(bin_dir, name)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.chmod(tmp, os.stat(tmp).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        os.replace(tmp, path)
        written.append(path)
    return written


if __name__ == "__main__":
    for p in install(sys.argv[1] if len(sys.argv) > 1 else None):
        print(p)
