"""Write the `torch` and `torchd` launchers into the interpreter's bin folder.

`torch` gets a shebang naming the real interpreter with `-IS` as one word (Linux passes the rest
of the line as a single argument) and puts the package folder on sys.path itself, since -S skips
site. A pip console-script wrapper would cost ~15 ms per command.

For the editable dev tree (scripts/bootstrap.sh runs it after `pip install -e`). A wheel (`pip install .`,
`pipx install .`) carries its own pair, scripts/launchers/, which pip installs with no further step.
"""
import os
import stat
import sys

import torchsh

CLIENT = """#!{python} -IS
import sys
sys.path.insert(0, {package_root!r})
from torchsh.client.main import main
main()
"""
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
    for name, text in (("torch", CLIENT), ("torchd", DAEMON)):
        path = os.path.join(bin_dir, name)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text.format(python=python, package_root=package_root))
        os.chmod(tmp, os.stat(tmp).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        os.replace(tmp, path)
        written.append(path)
    return written


if __name__ == "__main__":
    for p in install(sys.argv[1] if len(sys.argv) > 1 else None):
        print(p)
