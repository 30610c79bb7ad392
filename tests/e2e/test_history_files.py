"""`torch history --python` of tensors read from files: a file still there is read from its path with its
sha256, one changed or gone comes back as its values (literals, a sidecar, or files beside the script
named by their sha256, never written over), and a FIFO where a loaded file was does not hang the writer."""
import glob
import os
import re
import subprocess
import sys

import torch

from support.history_replay import check as _check, script as _script


def test_tensors_read_from_files_now_gone_come_back_as_literals_or_from_the_sidecar(sh):
    import torch
    small, large = sh.put(torch.arange(6.0).reshape(2, 3)), sh.put(torch.rand(100, 10, dtype=torch.float64))
    y = sh("torch add $(torch sum %s) $(torch sum %s)" % (small, large))
    for path in glob.glob(os.path.join(sh.folder, "*-put.pt")):  # what sh.put loaded them from
        os.unlink(path)
    folder = sh.tmp("replay")
    os.makedirs(folder)
    sh("torch history --python --for %s --sidecar %s/data.safetensors > %s/s.py" % (y, folder, folder))
    with open(os.path.join(folder, "s.py")) as f:
        text = f.read()
    assert "torch.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], dtype=torch.float32)" in text and "_sidecar('s0')" in text
    _check(os.path.join(folder, "s.py"))


def test_without_sidecar_large_tensors_go_beside_the_script_under_their_sha256_and_are_never_written_over(sh):
    import torch
    y = sh("torch add $(torch sum %s) 1" % sh.put(torch.rand(100, 10, dtype=torch.float64)))
    for path in glob.glob(os.path.join(sh.folder, "*-put.pt")):  # gone: the script needs the values themselves
        os.unlink(path)
    folder = sh.tmp("default")
    os.makedirs(folder)
    r = sh.run("torch history --python --for %s > s.py" % y, cwd=folder)
    name = re.search(r"history-[0-9a-f]{16}\.safetensors", r.err).group(0)
    assert r.code == 0 and set(os.listdir(folder)) == {"s.py", name}
    assert "SIDECAR = '%s'" % name in open(os.path.join(folder, "s.py")).read()
    _check(os.path.join(folder, "s.py"))
    again = sh.run("torch history --python --for %s > s2.py" % y, cwd=folder)  # the same tensors: the same file
    assert again.code == 0 and name in again.err and "already there" in again.err
    with open(os.path.join(folder, name), "wb") as f:
        f.write(b"not these tensors")
    refused = sh.run("torch history --python --for %s > s3.py" % y, cwd=folder)
    assert refused.code == 6 and "[file_error]" in refused.err and "--sidecar" in refused.err
    assert open(os.path.join(folder, name), "rb").read() == b"not these tensors"


def _files(folder):
    """Files of each format `torch load` reads from its path in the script, and a model saved by `nn save`."""
    import numpy as np
    import torch
    from safetensors.torch import save_file
    g = torch.Generator().manual_seed(3)
    torch.save(torch.randn(30, 4, generator=g), os.path.join(folder, "a.pt"))
    torch.save([torch.ones(2), torch.randn(80, generator=g)], os.path.join(folder, "l.pt"))
    np.save(os.path.join(folder, "b.npy"), np.arange(90.0).reshape(9, 10))
    np.savez(os.path.join(folder, "z.npz"), p=np.ones(3, dtype=np.float32), q=np.arange(70))
    save_file({"w": torch.randn(100, generator=g).to(torch.bfloat16), "b": torch.ones(2)},
              os.path.join(folder, "c.safetensors"))


_READS = """
a=$(torch load a.pt); b=$(torch load b.npy --dtype float32)
read -r cb cw < <(torch load c.safetensors | xargs); read -r l0 l1 < <(torch load l.pt | xargs)
read -r zp zq < <(torch load z.npz | xargs)
s=$(torch add $(torch sum $a) $(torch sum $b)); s=$(torch add $s $(torch sum $cw --dtype float32))
s=$(torch add $s $(torch sum $l1)); s=$(torch add $s $(torch sum $zq --dtype float32))
m=$(torch nn sequential 'linear 3 2' relu 'linear 2 1'); torch nn save $m m.safetensors
m2=$(torch nn sequential 'linear 3 2' relu 'linear 2 1'); torch nn load $m2 m.safetensors >/dev/null
echo $s $m2
"""


def _read_files(sh):
    """(the folder, the sum of tensors read from each format, a model `nn load`ed) after _READS."""
    folder = sh.tmp("files")
    os.makedirs(folder)
    _files(folder)
    s, m2 = sh("cd %s\n%s" % (folder, _READS)).split()
    return folder, s, m2


def test_files_it_loaded_are_read_from_their_paths_with_their_sha256_and_replay_bit_for_bit(sh):
    folder, s, m2 = _read_files(sh)
    path, text = _script(sh, s)
    assert "SIDECAR" not in text and "torch.tensor(" not in text  # nothing written as a value
    assert "torch.load(_checked(%r, " % os.path.join(folder, "a.pt") in text
    assert "numpy.load(_checked(%r, " % os.path.join(folder, "b.npy") in text
    assert re.search(r"^# sha256 [0-9a-f]{64} of %s when the daemon read it$" % re.escape(repr(os.path.join(folder, "c.safetensors"))),
                     text, re.M), text
    assert "check: 17 of 17 " in _check(path)  # the nine tensors read, the eight sums
    path, text = _script(sh, m2)
    assert ".load_state_dict(_safetensors(_checked(%r, " % os.path.join(folder, "m.safetensors") in text
    _check(path)


def test_a_script_stops_naming_the_file_when_a_file_it_reads_changed_or_is_gone(sh):
    folder, s, _ = _read_files(sh)
    path, _ = _script(sh, s)
    with open(os.path.join(folder, "b.npy"), "r+b") as f:
        f.seek(-1, 2)
        f.write(b"\x01")
    p = subprocess.run([sys.executable, "-I", path, "--check"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "b.npy changed since the daemon read it: sha256 " in p.stderr, p.stderr
    os.unlink(os.path.join(folder, "a.pt"))
    p = subprocess.run([sys.executable, "-I", path], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "a.pt is gone or unreadable" in p.stderr, p.stderr


def test_a_file_changed_or_gone_before_the_script_is_written_comes_back_as_its_values(sh):
    folder, s, _ = _read_files(sh)
    os.unlink(os.path.join(folder, "a.pt"))
    with open(os.path.join(folder, "z.npz"), "ab") as f:
        f.write(b"\0")
    replay = sh.tmp("replay")
    os.makedirs(replay)
    sh("torch history --python --for %s --sidecar %s/data.safetensors > %s/s.py" % (s, replay, replay))
    with open(os.path.join(replay, "s.py")) as f:
        text = f.read()
    assert "_sidecar('s0')" in text and "'%s'" % os.path.join(folder, "a.pt") not in text
    assert "z.npz" not in text and "numpy.load(_checked(%r, " % os.path.join(folder, "b.npy") in text
    _check(os.path.join(replay, "s.py"))


def test_a_fifo_put_where_a_loaded_file_was_does_not_hang_the_script_writer(sh):
    import torch
    path = sh.tmp("small.pt")
    torch.save(torch.arange(4.0), path)
    t = sh("torch load %s" % path)
    os.unlink(path)
    os.mkfifo(path)
    text = sh("torch history --python --for %s" % t, timeout=60)
    assert "torch.tensor([0.0, 1.0, 2.0, 3.0], dtype=torch.float32)" in text
