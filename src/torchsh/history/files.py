"""Files the history's requests read (`torch load FILE`, `torch nn load M FILE`), written in the script as the
PyTorch that reads them, from their paths, with the file's sha256 as the daemon read it.

note() hashes the file when the request is logged (only these ops pay for it) and keeps what the reader
gave (the names of the tensors a file held). lines() writes the read as torchsh's reader does it, so the
values are bit for bit the daemon's: .pt/.pth through torch.load(weights_only=True), .safetensors by the
script's own reader (torch alone), .npy/.npz through numpy. At run time the script checks the file's sha256
first and exits 1 naming the file when it changed or is gone. When the file has already changed or gone by
the time the script is written (or its format has no form here: csv, parquet, images), lines() gives None and
the tensor is written with its value instead (a literal, or the sidecar).
"""
import hashlib
import os
import re
import stat

from torchsh.formats import headers
from torchsh.quoting import python_comment, python_string

VALUES_MAX = 256 << 20  # bytes of a dataset the script writes as its values, at most (datasets.as_values)
_STREAMED = (".arrow", ".feather", ".ipc", ".tar")  # `data open` reads these by pieces, never whole

_PATHS = {"load": "file", "nn.load": "file"}  # op -> its Path argument: the file it reads
_TENSOR_READS = {".pt": "pt", ".pth": "pt", ".safetensors": "safetensors", ".npy": "npy", ".npz": "npz"}
_STATE_READS = {".pt": "pt", ".pth": "pt", ".ckpt": "pt", ".bin": "pt", ".safetensors": "safetensors"}
_HEX = re.compile(r"[0-9a-f]{64}")  # a sha256 as hashlib writes it: shown in a comment as it is


def sha256(path):
    """The file's sha256 (hex), or None where it is no regular file or cannot be read."""
    h = hashlib.sha256()
    try:  # opened without blocking and checked by its descriptor: a FIFO put in its place must not hang the daemon
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        for block in iter(lambda: os.read(fd, 1 << 20), b""):
            h.update(block)
    except OSError:
        return None
    finally:
        os.close(fd)
    return h.hexdigest()


def _worth_hashing(paths):
    """Whether the script can use the sha256 of the files `data open` read: .npy files it reads from their paths
    (any size), or files small enough to be written as their values (datasets.VALUES_MAX), but not streams (a
    Parquet set with --stream, Arrow files, tar shards): opening one reads no data, and hashing would read all of
    it (a 128 MiB Arrow file: 90 ms of a 4 ms open) for a comment beside values the script writes anyway."""
    if any(os.path.splitext(str(p))[1].lower() in _STREAMED for p in paths):
        return False
    try:
        sizes = [os.stat(p).st_size for p in paths]
    except (OSError, TypeError, ValueError):
        return False
    return all(str(p).endswith(".npy") for p in paths) or sum(sizes) <= VALUES_MAX


def note(entry, values, result):
    """The file an op read: its path and sha256, and the names of the tensors `load` made of it."""
    if entry.op == "data.open":
        paths = values.get("files") or ()
        if values.get("stream") or not _worth_hashing(paths):
            return
        read = [{"path": os.path.abspath(p), "sha256": sha256(p)} for p in paths]
        if read and all(f["sha256"] for f in read):
            entry.made["files"] = read
        return
    arg = _PATHS.get(entry.op)
    path = values.get(arg) if arg else None
    if not isinstance(path, str):
        return
    digest = sha256(path)
    if digest is None:  # a folder (a sharded checkpoint): not written from its path
        return
    entry.made["file"] = {"path": os.path.abspath(path), "sha256": digest}
    if isinstance(result, dict):
        entry.made["file"]["keys"] = list(result)
    if entry.op == "nn.load" and path.endswith(".safetensors"):
        meta = headers.torchsh_metadata(headers.inspect(path)["metadata"])
        entry.made["file"]["checkpoint"] = meta.get("format") == "torchsh-checkpoint-1"


def lines(e, r):
    """The script lines reading e's file, or None where it is written with its values instead."""
    info = e.made.get("file")
    if info is None or sha256(info["path"]) != info["sha256"]:
        return None  # changed or gone since it was read: the values the daemon holds go to the script
    a = e.args
    if e.op == "nn.load":
        return _state(e, r, info)
    reader = _TENSOR_READS.get(os.path.splitext(info["path"])[1].lower())
    if reader is None:
        return None
    r.helpers.add("_checked")
    source = _source(reader, info, r)
    to = ".to(%s)" % r.lit(a["dtype"]) if a.get("dtype") is not None else ""
    keys = info.get("keys")
    if keys is None:  # one tensor
        return [comment(info), "%s = %s%s%s" % (r.outs(e), source, "" if reader != "safetensors" else "['']", to)]
    if reader == "pt":
        r.helpers.add("_named")
        source = "_named(%s)" % source
    return [comment(info), "_file = %s" % source] + \
        ["%s = _file[%s]%s" % (r.v(h), python_string(k), to) for h, k in zip(e.outputs, keys)]


def comment(info):
    """The comment above a file's read: its path as a literal, never raw (a newline in a name would end it);
    the sha256 as it is when it is one (hex digits: hashlib's, unless a session file from elsewhere says so)."""
    digest = info["sha256"]
    shown = digest if isinstance(digest, str) and _HEX.fullmatch(digest) else python_string(str(digest))
    return python_comment("sha256 %s of %s when the daemon read it" % (shown, python_string(info["path"])))


def checked(info):
    """The script's read of a file: its path once its sha256 is the daemon's (the _checked helper)."""
    return "_checked(%s, %s)" % (python_string(info["path"]), python_string(info["sha256"]))


def _source(reader, info, r):
    path = checked(info)
    if reader == "pt":
        return "torch.load(%s, weights_only=True, map_location='cpu')" % path
    if reader == "safetensors":
        r.helpers.add("_safetensors")
        return "_safetensors(%s)" % path
    r.helpers.add("_numpy")
    if reader == "npy":
        return "torch.from_numpy(numpy.load(%s, allow_pickle=False))" % path
    return "{k: torch.from_numpy(v) for k, v in numpy.load(%s, allow_pickle=False).items()}" % path


def _state(e, r, info):
    """`nn load` of one file, as torchsh loads it: the whole state dict, strict, without renames."""
    a = e.args
    reader = _STATE_READS.get(os.path.splitext(info["path"])[1].lower())
    if reader is None or a.get("strip") or a.get("map") or a.get("partial") or a.get("trust"):
        return None
    r.helpers.add("_checked")
    state = _source(reader, info, r)
    if a.get("key") is not None:
        state += "[%s]" % r.lit(a["key"])
    if info.get("checkpoint"):  # a torchsh checkpoint: the model's part, its `model.` keys
        state = "{k[6:]: v for k, v in %s.items() if k.startswith('model.')}" % state
    return [comment(info), "with torch.no_grad():", "    %s.load_state_dict(%s, strict=True)" % (r.lit(a["model"]), state)]


HELPERS = {
    "_checked": '''def _checked(path, sha256):
    """path, once its sha256 is the one the daemon read; else the script stops here, naming the file."""
    import hashlib
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError as e:
        sys.exit("%s is gone or unreadable (%s): the daemon read it with sha256 %s" % (path, e.strerror, sha256))
    if h.hexdigest() != sha256:
        sys.exit("%s changed since the daemon read it: sha256 %s, not %s" % (path, h.hexdigest(), sha256))
    return path
''',
    "_named": '''def _named(obj):
    """A .pt's tensors by name, as torchsh reads them: a lone tensor "", a dict's own names, a list's indices."""
    if isinstance(obj, torch.Tensor):
        return {"": obj}
    return dict(obj) if isinstance(obj, dict) else {str(i): v for i, v in enumerate(obj)}
''',
    "_numpy": "import numpy\n",
    "_safetensors": '''def _safetensors(path):
    """{name: tensor} of a .safetensors file, each in memory of its own (read with torch alone)."""
    import json, struct
    with open(path, "rb") as f:
        data = f.read()
    n, out = struct.unpack("<Q", data[:8])[0], {}
    for key, info in json.loads(data[8:8 + n]).items():
        if key != "__metadata__":
            a, b = info["data_offsets"]
            raw, dtype = bytearray(data[8 + n + a:8 + n + b]), getattr(torch, _DTYPES[info["dtype"]])
            t = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
            out[key] = t.reshape(info["shape"])
    return out


_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
           "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8", "BOOL": "bool", "U16": "uint16",
           "U32": "uint32", "U64": "uint64", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2"}
''',
}
