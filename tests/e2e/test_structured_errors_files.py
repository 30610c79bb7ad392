"""Every failure the fuzzers of issue 10 found in files is a stable code with a one-line message, never
internal_error: saves into missing or read-only folders, corrupt files, a checkpoint with damaged metadata,
.npy headers that lie, pickles (never unpickled), a .pt or .npz posted as .npy, a FIFO or device given to
load (refused at once, other shells go on), and failing saves that must leave no temp file.
"""
import io
import json
import os
import pickle
import time
import zipfile

import numpy as np
import torch

from support.structured import api, code_of as _code, one_line as _line


def test_save_into_a_missing_or_read_only_folder_is_a_file_error(sh, tmp_path):
    h = sh("torch ones '[2]'")
    for ext in (".npy", ".npz", ".safetensors", ".pt", ".csv"):
        code, line = _line(sh, "torch save %s %s/no/such/folder/x%s" % (h, tmp_path, ext))
        assert (code, _code(line)) == (6, "file_error"), line
        assert "no/such/folder/x" + ext in line
    if os.geteuid() == 0:
        read_only = "/sys"  # root writes through mode bits, but sysfs refuses new files
    else:
        read_only = str(tmp_path / "ro")
        os.mkdir(read_only, 0o555)
    code, line = _line(sh, "torch save %s %s/x.npy" % (h, read_only))
    assert (code, _code(line)) == (6, "file_error"), line
    m = sh("torch nn linear 2 2")
    for script in ("torch nn save %s %s/no/m.safetensors" % (m, tmp_path),
                   "torch checkpoint save %s/no/c.safetensors %s" % (tmp_path, m)):
        code, line = _line(sh, script)
        assert (code, _code(line)) == (6, "file_error"), line


def _corrupt_files(folder):
    """(path, what) for damaged files of every format we read."""
    buf = io.BytesIO()
    np.save(buf, np.arange(100, dtype=np.float32))
    npy = buf.getvalue()
    t = torch.arange(10.0)
    torch.save({"a": t}, os.path.join(folder, "good.pt"))
    pt = open(os.path.join(folder, "good.pt"), "rb").read()
    from safetensors.torch import save
    st = save({"a": t})
    buf = io.BytesIO()
    np.savez(buf, a=np.arange(10))
    npz = buf.getvalue()
    files = {
        "trunc.npy": npy[:100], "junk.npy": b"\x93NUMPY\x01\x00garbage", "empty.npy": b"",
        "trunc.npz": npz[:60], "junk.npz": b"PK\x03\x04" + b"\0" * 50, "text.npz": b"hello",
        "trunc.safetensors": st[:20], "junk.safetensors": b"\xff" * 64, "hdr.safetensors": b"\x10\0\0\0\0\0\0\0{bad json here}",
        "trunc.pt": pt[: len(pt) // 2], "junk.pt": b"junk" * 10, "empty.pt": b"",
        "bad.csv": b"1,2\n3,x,\xff\n", "ragged.csv": b"1,2\n3\n",
    }
    # Found by the file fuzzer: a Python-2-style header numpy hands to its tokenizer, a compressed npz
    # member that fails inside zlib, and a pickle stream that empties torch's weights-only unpickler.
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), "
    files["tokenizer.npy"] = b"\x93NUMPY\x01\x00v\x00" + (header + " " * (117 - len(header)) + "\n").encode() + b"\0" * 24
    buf = io.BytesIO()
    np.savez_compressed(buf, a=np.arange(1000.0))
    data = bytearray(buf.getvalue())
    at = data.index(b"a.npy") + 15
    data[at:at + 20] = b"\xff" * 20
    files["zlib.npz"] = bytes(data)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("archive/data.pkl", b"\x80\x02e.")
        z.writestr("archive/version", "3\n")
    files["stack.pt"] = buf.getvalue()
    out = []
    for name, data in files.items():
        path = os.path.join(folder, name)
        with open(path, "wb") as f:
            f.write(data)
        out.append(path)
    return out


def test_corrupt_files_are_file_errors(sh, tmp_path):
    for path in _corrupt_files(str(tmp_path)):
        code, line = _line(sh, "torch load %s" % path)
        assert (code, _code(line)) == (6, "file_error"), (path, line)
    m = sh("torch nn linear 2 2")
    for name in ("junk.safetensors", "trunc.safetensors", "hdr.safetensors", "junk.pt", "trunc.pt"):
        code, line = _line(sh, "torch nn load %s %s/%s" % (m, tmp_path, name))
        assert (code, _code(line)) == (6, "file_error"), (name, line)
    code, line = _line(sh, "torch checkpoint load %s/junk.safetensors %s" % (tmp_path, m))
    assert (code, _code(line)) == (6, "file_error"), line


def test_a_checkpoint_with_damaged_metadata_is_a_file_error(sh, tmp_path):
    from safetensors.torch import save_file
    path = str(tmp_path / "ck.safetensors")
    m = sh("torch nn linear 2 2")
    o = sh("torch optim sgd %s --lr 0.1" % m)
    sh("torch checkpoint save %s %s %s" % (path, m, o))
    from safetensors import safe_open
    with safe_open(path, framework="pt") as f:
        tensors = {k: f.get_tensor(k) for k in f.keys()}
        meta = json.loads(f.metadata()["torchsh"])
    meta["optimizer"]["state"] = {"__dict__": [[1]]}
    save_file(tensors, path, metadata={"torchsh": json.dumps(meta)})
    code, line = _line(sh, "torch checkpoint load %s %s %s" % (path, m, o))
    assert (code, _code(line)) == (6, "file_error"), line
    save_file(tensors, path, metadata={"torchsh": "[1,2]"})
    code, line = _line(sh, "torch checkpoint load %s %s" % (path, m))
    assert (code, _code(line)) == (6, "file_error"), line


def _npy_claiming(shape, dtype="<f8"):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (dtype, shape)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\0" * 16


def test_npy_header_with_a_huge_shape_is_refused_before_allocating(sh, tmp_path):
    for shape in ("(1000000000000,)", "(4611686018427387904, 4)", "(100000, 100000, 100000)"):
        path = tmp_path / "huge.npy"
        path.write_bytes(_npy_claiming(shape))
        code, line = _line(sh, "torch load %s" % path)
        assert (code, _code(line)) == (6, "file_error") and "claims shape" in line, line
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("a.npy", _npy_claiming(shape))
        (tmp_path / "huge.npz").write_bytes(buf.getvalue())
        code, line = _line(sh, "torch load %s" % (tmp_path / "huge.npz"))
        assert (code, _code(line)) == (6, "file_error") and "claims shape" in line, line
        status, err = api(sh, "/v1/tensors", _npy_claiming(shape))
        assert status == 400 and err["error"]["code"] == "bad_request" and "claims shape" in err["error"]["message"]


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, ("touch %s" % self.marker,))


def test_a_pickle_given_to_load_or_nn_load_is_never_unpickled(sh, tmp_path):
    marker = tmp_path / "pwned"
    m = sh("torch nn linear 2 2")
    for name, writer in (("evil.pt", lambda f: torch.save({"w": _Evil(str(marker))}, f)),
                         ("raw.pt", lambda f: pickle.dump(_Evil(str(marker)), f)),
                         ("raw.safetensors", lambda f: pickle.dump(_Evil(str(marker)), f)),
                         ("raw.npy", lambda f: pickle.dump(_Evil(str(marker)), f))):
        path = tmp_path / name
        with open(path, "wb") as f:
            writer(f)
        code, line = _line(sh, "torch load %s" % path)
        assert (code, _code(line)) == (6, "file_error"), (name, line)
        if name.endswith((".pt", ".safetensors")):
            code, line = _line(sh, "torch nn load %s %s" % (m, path))
            assert (code, _code(line)) == (6, "file_error"), (name, line)
    np.save(tmp_path / "objects.npy", np.array([_Evil(str(marker))], dtype=object), allow_pickle=True)
    code, line = _line(sh, "torch load %s" % (tmp_path / "objects.npy"))
    assert (code, _code(line)) == (6, "file_error") and "never unpickled" in line, line
    assert not marker.exists()


def test_a_pt_or_npz_posted_to_v1_tensors_is_a_bad_request(sh, tmp_path):
    torch.save(torch.ones(2), tmp_path / "t.pt")
    status, err = api(sh, "/v1/tensors", (tmp_path / "t.pt").read_bytes())
    assert status == 400 and err["error"]["code"] == "bad_request" and "zip" in err["error"]["message"]
    for body in (b"", b"junk", pickle.dumps([1, 2]), _npy_claiming("(3,)", "|O")):
        status, err = api(sh, "/v1/tensors", body)
        assert status == 400 and err["error"]["code"] == "bad_request", (body, err)
    buf = io.BytesIO()
    np.save(buf, np.array(["a", "b"]))
    status, err = api(sh, "/v1/tensors", buf.getvalue())
    assert status == 400 and err["error"]["code"] == "bad_request", err
    buf = io.BytesIO()
    np.save(buf, np.arange(3))
    status, err = api(sh, "/v1/tensors?requires_grad=true", buf.getvalue())
    assert status == 422 and err["error"]["code"] == "dtype_error", err


def test_load_of_a_fifo_or_device_is_refused_at_once_and_other_shells_go_on(sh, tmp_path):
    fifo = tmp_path / "pipe.npy"
    os.mkfifo(fifo)
    os.symlink("/dev/zero", tmp_path / "zero.npy")
    os.symlink("/dev/urandom", tmp_path / "random.pt")
    os.mkdir(tmp_path / "folder.npy")
    for name in ("zero.npy", "random.pt", "folder.npy"):
        code, line = _line(sh, "torch load %s" % (tmp_path / name))
        assert (code, _code(line)) == (6, "file_error") and "not a regular file" in line, line
    started = time.monotonic()
    code, line = _line(sh, "torch load %s" % fifo)
    assert (code, _code(line)) == (6, "file_error") and "FIFO" in line, line
    assert time.monotonic() - started < 20  # generous: today it never returns
    m = sh("torch nn linear 2 2")
    code, line = _line(sh, "torch nn load %s %s" % (m, fifo))
    assert _code(line) == "file_error" and "FIFO" in line, line
    code, line = _line(sh, "torch load %s" % (tmp_path / "zero.npy"))
    assert _code(line) == "file_error" and "character device" in line, line
    assert sh("torch ones '[1]' | torch value") == "[1.0]"  # nobody is wedged behind it


def test_a_failing_save_leaves_no_temp_file(fresh_sh, tmp_path):
    import resource
    s = fresh_sh()
    pid = int(sh_pid(s))
    big = s("torch zeros '[1000000]'")   # 4 MB
    m = s("torch nn linear 1000 1000")
    out = tmp_path / "out"
    out.mkdir()
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (1 << 20, resource.RLIM_INFINITY))  # a 1 MiB "disk"
    try:
        for script in ["torch save %s %s/x%s" % (big, out, ext) for ext in (".npy", ".npz", ".safetensors", ".pt", ".csv")] \
                + ["torch nn save %s %s/m.safetensors" % (m, out), "torch checkpoint save %s/c.safetensors %s" % (out, m)]:
            code, line = _line(s, script)
            assert (code, _code(line)) == (6, "file_error"), (script, line)
            assert os.listdir(out) == [], (script, os.listdir(out))
    finally:
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert s("torch value %s --meta | head -c 20" % big)  # the daemon lived through it
    s("torch save %s %s/ok.npy" % (big, out))
    assert os.listdir(out) == ["ok.npy"]


def sh_pid(s):
    return s("torch daemon status | sed -n 's/^pid: *//p'")
