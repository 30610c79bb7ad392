"""Every failure the fuzzers of issue 10 found is a stable code with a one-line message, never internal_error.

One test per family: huge integers, ragged or mixed JSON, 5,000-deep JSON, JSON-API type confusion,
CUDA/MPS on a CPU build, saves into missing or read-only folders, corrupt files, .npy headers that lie,
pickles, a .pt posted as .npy, a word over the size limit, a FIFO given to load, lazy modules in
the census, and failing saves that must leave no temp file.
"""
import http.client
import io
import json
import os
import pickle
import socket
import time
import zipfile

import numpy as np
import pytest
import torch

from torchsh import protocol


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("torchd", timeout=60)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(self.unix_path)


def _post(sh, path, body):
    conn = UnixHTTPConnection(sh.socket)
    try:
        conn.request("POST", path, body=body)
        r = conn.getresponse()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read()
    finally:
        conn.close()


def api(sh, path, body):
    status, _, payload = _post(sh, path, body if isinstance(body, bytes) else json.dumps(body).encode())
    return status, json.loads(payload)


def cli(sh, *argv):
    """POST /v1/cli straight over the socket (words the kernel's 128 KiB argv limit would stop). (exit, stderr)"""
    body = protocol.encode_cli_request([a.encode() for a in argv], sh.folder.encode(), True, [])
    status, headers, payload = _post(sh, protocol.CLI_PATH, body)
    out_len = int(headers[protocol.H_STDOUT])
    return int(headers[protocol.H_EXIT]), payload[out_len:].decode()


def _line(sh, script):
    r = sh.run(script)
    lines = r.err.strip().split("\n")
    assert len(lines) == 1, r.err
    return r.code, lines[0]


def _code(line):
    return line.rsplit("[", 1)[1].rstrip("]")


def test_huge_integers_are_bad_arguments_naming_the_range(sh):
    for script in ("torch abs 99999999999999999999999",
                   "torch ones '[99999999999999999999999]'",
                   "a=$(torch ones '[2]'); torch sum $a 99999999999999999999999",
                   "a=$(torch ones '[2]'); torch add $a -99999999999999999999999",
                   "torch ones '[2]' --device 99999999999999999999",
                   "torch abs %s" % ("9" * 5000)):
        code, line = _line(sh, script)
        assert (code, _code(line)) == (2, "bad_argument"), (script, line)
        assert "out of range" in line and len(line) < 400, line


def test_ragged_and_mixed_json_are_bad_arguments(sh):
    for script in ("torch tensor '[[1,2],[3]]'", "torch tensor '[1,\"a\"]'", "torch abs '[[1,2],[3]]'",
                   "torch abs '[1,\"a\"]'", "a=$(torch ones '[2]'); torch add $a '[[1],[2,3]]'",
                   "torch abs '[{\"a\":1}]'"):
        code, line = _line(sh, script)
        assert (code, _code(line)) == (2, "bad_argument"), (script, line)


def test_5000_deep_json_is_refused_as_an_argument_and_as_an_api_body(sh):
    deep = "[" * 5000 + "]" * 5000
    for op in ("tensor", "abs", "sum"):
        code, line = _line(sh, "torch %s '%s'" % (op, deep))
        assert code == 2 and _code(line) in ("bad_argument", "usage"), line
        assert len(line) < 600, line
    status, err = api(sh, "/v1/ops/tensor", deep.encode())
    assert status == 400 and err["error"]["code"] == "bad_request" and "nested" in err["error"]["message"]
    status, err = api(sh, "/v1/ops/tensor", b'{"args":[' + deep.encode() + b']}')
    assert status == 400 and err["error"]["code"] == "bad_request"
    status, err = api(sh, "/v1/ops/tensor", {"args": [json.loads("[" * 99 + "]" * 99)]})
    assert status == 400 and err["error"]["code"] == "bad_request"  # the body as a whole is over 100 levels


@pytest.mark.parametrize("body", [
    {"args": [1], "kwargs": [1]}, {"tensors": "x"}, {"args": {"a": 1}}, {"args": "abc"}, {"kwargs": "x"},
    {"env": {"TORCHSH_NO_GRAD": [1]}}, {"env": [1]}, {"env": "x"}, {"cwd": 5}, {"cwd": ["/"]},
    {"tensors": {"a": 1}}, {"tensors": 7},
])
def test_json_api_type_confusion_is_bad_request(sh, body):
    status, err = api(sh, "/v1/ops/abs", body)
    assert status == 400 and err["error"]["code"] == "bad_request", (body, err)


def test_json_api_odd_values_are_structured(sh):
    for op, body in (("abs", {"args": [[1, "a"]]}), ("abs", {"args": [10 ** 30]}), ("ones", {"args": [[10 ** 30]]}),
                     ("ones", {"args": [[2]], "kwargs": {"device": "cuda:99999999999999999999"}}),
                     ("ones", {"args": [[2]], "env": {"TORCHSH_DEVICE": "bogus"}}),
                     ("ones", {"args": [[2]], "env": {"TORCHSH_DEVICE": "cuda"}})):
        status, err = api(sh, "/v1/ops/" + op, body)
        assert err["error"]["code"] in ("bad_argument", "device_error"), (op, body, err)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_and_mps_on_a_cpu_build_are_device_errors_naming_the_devices(sh):
    for device in ("cuda", "cuda:1", "mps"):
        code, line = _line(sh, "torch ones '[2]' --device %s" % device)
        assert (code, _code(line)) == (4, "device_error"), line
        assert "devices here: cpu" in line and "CPU-only build" in line
    code, line = _line(sh, "TORCHSH_DEVICE=cuda torch zeros '[2]'")
    assert _code(line) == "device_error" and "cuda" in line.lower()
    code, line = _line(sh, "torch ones '[2]' --device cuda")
    assert "install a CUDA build" in line


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


def test_a_word_over_256_kib_is_too_large_before_parsing(sh):
    code, err = cli(sh, "tensor", "[" + "1," * (512 * 1024) + "1]")
    assert code == 2 and "[too_large]" in err and "256 KiB" in err and len(err) < 400, err
    code, err = cli(sh, "add", "x" * (1 << 20), "1")
    assert code == 2 and "[too_large]" in err, err
    code, err = cli(sh, "tensor", "[" + "1," * 1000 + "1]")  # big but legal
    assert code == 0, err


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


def test_a_lazy_module_does_not_break_the_census_or_status(sh):
    m = sh("torch nn lazy_linear 3")
    p, q = sh("torch nn parameters %s" % m).split()
    try:
        assert m in sh("torch tensors")
        assert "objects:" in sh("torch daemon status")
        conn = UnixHTTPConnection(sh.socket)
        for path in ("/v1/status", "/v1/tensors"):
            conn.request("GET", path)
            r = conn.getresponse()
            body = json.loads(r.read())
            assert r.status == 200, body
        conn.close()
        rows = {row["handle"]: row for row in body["objects"]}
        assert rows[m]["parameters"] == 0 and rows[m]["uninitialized"] == 2
        assert rows[p]["shape"] is None and rows[p]["bytes"] == 0
    finally:
        sh("torch free %s %s %s" % (m, p, q))


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


def test_argument_checks_pytorch_makes_with_assert_or_arithmetic_are_structured(sh):
    """PyTorch's meta kernels and Python linalg code check arguments with AssertionError, and GroupNorm
    divides by its argument; that is the caller's mistake (exit 4 with PyTorch's message), not a bug."""
    code, line = _line(sh, "torch nn group_norm 0 8")
    assert (code, _code(line)) == (4, "torch_error") and "modulo by zero" in line, line
    m = sh("torch ones '[2]' --device meta")
    for script in ("torch inverse %s" % m, "torch linalg eigvalsh %s" % m, "torch lobpcg '[[4.5,0,4.5]]'",
                   "torch nn functional embedding %s 1e-320" % m):
        code, line = _line(sh, script)
        assert code == 4 and _code(line) in ("torch_error", "shape_mismatch"), (script, line)
        assert "must" in line, line


def test_inputs_on_which_pytorch_never_returns_are_refused_and_the_daemon_goes_on(sh):
    """torch.binomial with a NaN count and a 2**62-layer stack never return in PyTorch 2.13; under the one
    tensor lock that would wedge every shell. Found by tests/fuzz; refused by torchsh.guards."""
    count = sh("torch tensor '[NaN, 3.0]'")
    prob = sh("torch full '[2]' 0.5")
    r = sh.run("torch binomial %s %s" % (count, prob), timeout=60)
    assert r.code == 2 and "[bad_argument]" in r.err and "NaN" in r.err, r.err
    layer = sh("torch nn transformer_decoder_layer 8 2")
    for script in ("torch nn transformer_decoder %s %d" % (layer, 2 ** 62), "torch nn lstm 2 3 %d" % 2 ** 40):
        r = sh.run(script, timeout=60)
        assert r.code == 2 and "[bad_argument]" in r.err and "layers" in r.err, (script, r.err)
    fine = sh("torch binomial $(torch full '[2]' 4.0) %s" % prob)  # finite counts still sample
    assert sh("torch value %s --meta" % fine)
    # the guard reads no values of a meta tensor (it has none): PyTorch's own answer, never internal_error
    r = sh.run("torch binomial $(torch ones 2 --device meta) '[true,1.5]'")
    assert "[internal_error]" not in r.err and (r.code == 0 or r.err.count("\n") == 1), r.err
