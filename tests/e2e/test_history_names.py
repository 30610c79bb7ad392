"""Names never become code in `torch history --python` (issue 35): a file name with a newline, quotes, `'''`,
backslashes, `$(…)`, backticks, U+202E or control characters, read through every site that reaches a script
(load of .npy/.pt/.safetensors/.npz with such tensor names too, nn load from a pickle, a torchsh checkpoint
and --key, data open of .npy files and of a CSV, fit --log, a named object, the --sidecar file), comes out
as a string literal, comments included. Each script compiles, is printable ASCII, has the payload only
inside string tokens and comments, calls nothing but what the script's own forms call, and `python -I s.py
--check` passes without the payload running."""
import ast
import io
import os
import subprocess
import sys
import tokenize

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

PAYLOAD = "PWNED"
# Each is a file-name part (no "/", no NUL); each would break out of a raw comment or a raw literal.
NASTY = [
    'a\nopen("%s","w")\n#' % PAYLOAD,
    "q'\"%s" % PAYLOAD,
    "t'''x\"\"\"%s" % PAYLOAD,
    "b\\%s\\" % PAYLOAD,
    "s$(touch %s)" % PAYLOAD,
    "k`touch %s`" % PAYLOAD,
    "r\u202e%s.yp" % PAYLOAD,
    "c\x1b[31m\r\x0b\x0c\x7f\x01\x85\u2028%s" % PAYLOAD,
    "cr\r%s = 1" % PAYLOAD,
]
IDS = ["newline", "quotes", "triple", "backslash", "dollar", "backtick", "rlo", "control", "cr"]
# What the script's lines outside its helpers call by a bare name; any other (open, exec, eval…) is a payload's.
OURS = {"_checked", "_named", "_safetensors", "_sidecar", "_Loader", "_flat", "_state", "print", "len", "range",
        "float", "list", "digest", "globals"}
HELPERS = {"_checked", "_named", "_safetensors", "_sidecar", "_Loader", "_flat", "_state", "digest"}


def _folders(sh):
    """One folder per nasty name, each holding the files named after it."""
    root = sh.tmp("names")
    os.makedirs(root)
    out = []
    for i, name in enumerate(NASTY):
        folder = os.path.join(root, "%d%s" % (i, name))
        os.makedirs(folder)
        out.append(folder)
    return out


def _load_files(sh):
    """`torch load` of an .npy, a .pt dict, a .safetensors and an .npz, each named and keyed nastily."""
    words = []
    for i, (folder, name) in enumerate(zip(_folders(sh), NASTY)):
        path = os.path.join(folder, name)
        np.save(path + ".npy", np.full((2,), i, dtype=np.float32))
        _save({name: torch.full((2,), float(i))}, path + ".pt")
        save_file({name: torch.full((2,), i + 0.5)}, path + ".safetensors")
        np.savez(path + ".npz", **{name.replace("\x00", ""): np.full((2,), i + 0.25, dtype=np.float32)})
        words += ["$(torch load %s)" % _q(path + ext) for ext in (".npy", ".pt", ".safetensors", ".npz")]
    return "torch stack %s" % " ".join(words)


def _nn_loads(sh):
    """`torch nn load` from a pickle (with --key), a torchsh checkpoint (.safetensors) and a plain file."""
    torch.manual_seed(3)
    state = torch.nn.Linear(2, 2).state_dict()
    lines = ["m=$(torch nn linear 2 2)"]
    for folder, name in zip(_folders(sh), NASTY):
        path = os.path.join(folder, name)
        _save({name: state}, path + ".pt")
        save_file(dict(state), path + ".safetensors")
        lines += ["torch nn load $m %s --key %s >/dev/null" % (_q(path + ".pt"), _q(name)),
                  "torch nn load $m %s >/dev/null" % _q(path + ".safetensors")]
    return "\n".join(lines + ["echo $m"])


def _data_open(sh):
    """`data open` of two .npy files (read from their paths) and of a CSV (written as its values)."""
    lines = []
    for i, (folder, name) in enumerate(zip(_folders(sh), NASTY)):
        path = os.path.join(folder, name)
        np.save(path + "x.npy", np.arange(6, dtype=np.float32).reshape(3, 2) + i)
        np.save(path + "y.npy", np.arange(3, dtype=np.float32) + i)
        with open(path + ".csv", "w") as f:
            f.write("a,b,label\n1,%d,0\n3,4,1\n" % i)
        lines += ["b=($(torch data next $(torch data loader $(torch data open %s %s) --batch_size 3)))"
                  % (_q(path + "x.npy"), _q(path + "y.npy")),
                  "c=($(torch data next $(torch data loader $(torch data open %s --target label) --batch_size 2)))"
                  % _q(path + ".csv"),
                  "all+=(${b[0]} ${b[1]} ${c[0]})"]
    return "all=()\n" + "\n".join(lines) + "\ntorch cat $(for t in ${all[@]}; do torch flatten $t; done)"


def _fit_log(sh):
    """A fit whose --log folder (and its checkpoint) is named nastily, and a named model."""
    torch.manual_seed(4)
    x, y = sh.tmp("fx.pt"), sh.tmp("fy.pt")
    torch.save(torch.randn(8, 2), x)
    torch.save(torch.randn(8, 1), y)
    log = os.path.join(_folders(sh)[0], NASTY[0])
    return ("m=$(torch nn linear 2 1 --name 'n.a-m/e'); o=$(torch optim sgd $m --lr 0.1)\n"
            "L=$(torch data loader $(torch data tensors $(torch load %s) $(torch load %s)) --batch_size 4)\n"
            "torch fit $m $o $L --loss mse_loss --epochs 2 --log %s >/dev/null\n"
            "torch fit $m $o $L --loss mse_loss --epochs 3 --log %s --resume auto >/dev/null\necho $m"
            % (x, y, _q(log), _q(log)))


def _sidecar(sh):
    """A large tensor from a file gone since: it goes to the --sidecar file, whose name is nasty."""
    folder = _folders(sh)[-1]
    path = os.path.join(folder, "big.pt")
    _save(torch.arange(100.0), path)
    return "t=$(torch load %s); rm %s; echo $t" % (_q(path), _q(path)), os.path.join(folder, NASTY[1] + ".safetensors")


SITES = {"load": _load_files, "nn_load": _nn_loads, "data_open": _data_open, "fit_log": _fit_log}


def _save(obj, path):
    """torch.save through a file object: its archive's inner name is then not the path (with a backslash: refused)."""
    with open(path, "wb") as f:
        torch.save(obj, f)


def _q(text):
    """text as one bash word ($'…' keeps every control character as it is)."""
    return "$'%s'" % "".join("\\x%02x" % ord(c) if ord(c) < 128 and not c.isalnum() else c for c in text)


def _assert_inert(text):
    """The payload is only ever inside a string token or a comment, and no call is one a payload would make."""
    assert all(c == "\n" or " " <= c <= "~" for c in text), [c for c in text if c != "\n" and not " " <= c <= "~"][:5]
    compile(text, "s.py", "exec")
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if PAYLOAD in tok.string:
            assert tok.type in (tokenize.STRING, tokenize.COMMENT), tok
    body = ast.parse(text).body
    defined = [n.name for n in body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    assert set(defined) <= HELPERS, defined  # the script's own helpers, whose text is torchsh's
    lines = [n for top in body if not isinstance(top, (ast.FunctionDef, ast.ClassDef)) for n in ast.walk(top)]
    variables = {n.id for n in lines if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}  # models are called
    for node in lines:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id in OURS | variables, ast.unparse(node)
        if isinstance(node, ast.Name):  # the modules a payload would reach for, or a builtin that runs text
            assert node.id not in ("os", "subprocess", "builtins", "shutil", "importlib", "socket", "pty", "exec",
                                   "eval", "compile", "open", "__import__", "getattr", "setattr"), ast.unparse(node)
        assert not isinstance(node, (ast.Import, ast.ImportFrom)) or \
            {a.name for a in node.names} <= {"base64", "sys", "torch", "numpy"}, ast.unparse(node)


def _run(script_path, cwd):
    p = subprocess.run([sys.executable, "-I", script_path, "--check"], capture_output=True, text=True,
                       timeout=300, cwd=cwd)
    assert p.returncode == 0, p.stdout + p.stderr
    assert not os.path.exists(os.path.join(cwd, PAYLOAD))  # what the newline's open("PWNED", "w") would make
    return p.stdout


@pytest.mark.parametrize("site", sorted(SITES))
def test_nasty_names_through_every_site_stay_string_literals_and_the_script_checks(sh, site):
    target = sh(SITES[site](sh)).split()[-1]
    out = sh.tmp("replay")
    os.makedirs(out)
    script = os.path.join(out, "s.py")
    sh("torch history --python --for %s > %s" % (target, script))
    with open(script) as f:
        text = f.read()
    _assert_inert(text)
    assert "check: " in _run(script, out)


def test_a_nasty_sidecar_name_is_a_literal_and_the_script_reads_it(sh):
    words, sidecar = _sidecar(sh)
    target = sh(words)
    script = os.path.join(os.path.dirname(sidecar), "s.py")
    sh("torch history --python --for %s --sidecar %s > %s" % (target, _q(sidecar), _q(script)))
    with open(script) as f:
        text = f.read()
    assert "SIDECAR = %s" % ascii(os.path.basename(sidecar)) in text
    _assert_inert(text)
    _run(script, os.path.dirname(sidecar))
