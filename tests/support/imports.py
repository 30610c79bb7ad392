"""What importing one module of the client's side loads beyond a bare `python -IS` (from -X importtime):
the client's modules must stay builtins-only.
Use: `from support.imports import extra_imports` (tests/ is on sys.path)."""
import os
import subprocess
import sys


def extra_imports(module):
    src = os.path.dirname(os.path.dirname(os.path.abspath(__import__("torchsh").__file__)))
    code = "import sys; sys.path.insert(0, %r); import %s" % (src, module)
    p = subprocess.run([sys.executable, "-IS", "-X", "importtime", "-c", code], capture_output=True, text=True)
    bare = subprocess.run([sys.executable, "-IS", "-X", "importtime", "-c", "pass"], capture_output=True, text=True)
    names = lambda text: {ln.split("|")[-1].strip() for ln in text.splitlines() if ln.startswith("import time:")}
    return names(p.stderr) - names(bare.stderr) - {"package"}
