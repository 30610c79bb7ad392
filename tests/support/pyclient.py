"""The Python client as a shell word (`python -IS` on the installed launcher file): the oracle the fast paths, the
shell function and the launcher's bash part, are compared against, since `torch` on PATH is the launcher.
Use: `from support.pyclient import PYCLIENT` (tests/ is on sys.path)."""
import os
import shlex
import sys

PYCLIENT = shlex.join([sys.executable, "-IS", os.path.join(os.path.dirname(sys.executable), "torch")])
