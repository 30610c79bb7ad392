"""The fuzzers' harness (tests/fuzz/test_fuzz_daemon.py): the `fuzz` fixture (a daemon of the module's own,
its memory capped, with a handle of every kind and files of every format, good and bad), the value strategies
per argument kind, and the checks run after every request (no internal_error, no hang; sweeps of what the
fuzzed ops made). The budgets: TORCHSH_FUZZ_EXAMPLES and the others the test module's docstring names.
Use: `from fuzzing import fuzz  # noqa: F401` (a fixture) and the names the tests draw from."""
import io
import json
import os
import pickle
import resource
import shutil
import tempfile
import zipfile

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, strategies as st

import openapi_media
from conftest import Shell, stop_daemon
from unixhttp import Daemon

EXAMPLES = int(os.environ.get("TORCHSH_FUZZ_EXAMPLES", "10000"))
SETTINGS = dict(deadline=None, database=None, derandomize=False, print_blob=True,
                suppress_health_check=list(HealthCheck), phases=["explicit", "generate"])
# Ops the fuzzer must not call: they stop the daemon, follow its log or serve forever, or free the fixtures.
# (binomial with a NaN count, which never returns in PyTorch 2.13, was found here: torchsh.guards refuses it.)
EXCLUDED = {"daemon.stop", "daemon.restart", "daemon.log", "daemon.start", "free", "daemon.ttl", "serve"}
AS_HEADROOM = 3 << 30  # the daemon may map this much more than it has at start; bigger allocations fail fast


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory):
    folder = tempfile.mkdtemp(prefix="tshf-")  # short: AF_UNIX paths are limited
    work = str(tmp_path_factory.mktemp("fuzz-files"))
    shell = Shell(os.path.join(folder, "torchd.sock"), folder)
    # The memory budget, where the daemon has one: 2G, since the budget counts RSS and fuzzed model exports
    # (onnx, dynamo) and the like take it past 1G, after which every op is rightly refused with out_of_memory
    shell("TORCHSH_MAX_MEMORY=2G torch daemon start")
    d = Daemon(shell.socket, work)
    pid = d.status()["pid"]
    with open("/proc/%d/status" % pid) as f:
        vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    resource.prlimit(pid, resource.RLIMIT_AS, (vm + AS_HEADROOM, resource.RLIM_INFINITY))
    d.fixtures = _make_fixtures(d, work)
    d.bundle = openapi_media.export_bundle(openapi_media.session(shell.socket))
    d.pid = pid
    d.next_sweep = SWEEP_EVERY
    d.table = json.loads(d.request("GET", "/v1/ops")[2])["ops"]
    try:
        yield d
    finally:
        summary = d.summary()
        summary["daemon_pid_unchanged"] = _same_daemon(d, pid)
        text = json.dumps(summary, indent=1)
        print("\nfuzz counts: " + text)
        if d.internal:  # the tracebacks, before the daemon's folder goes
            with open(os.path.join(folder, "torchd.log"), errors="replace") as f:
                tracebacks = [block for block in f.read().split("\n20") if "Traceback" in block]
            print("\n".join(tracebacks[-5:])[-6000:])
        out = tmp_path_factory.getbasetemp() / "fuzz-counts.json"
        out.write_text(text)
        if os.environ.get("TORCHSH_FUZZ_COUNTS"):
            with open(os.environ["TORCHSH_FUZZ_COUNTS"], "w") as f:
                f.write(text)
        d.close()
        stop_daemon(shell)
        shutil.rmtree(folder, ignore_errors=True)


def _same_daemon(d, pid):
    try:
        return d.status()["pid"] == pid
    except Exception:
        return False


def _make_fixtures(d, work):
    """Handles of every kind and files of every format, good and bad, for the value strategies."""
    made = _make_handles(d)
    made["paths"] = _make_files(work)
    return made


def _make_handles(d):
    """A handle of every kind (tensors of every dtype and device, modules, an optimizer, a scheduler)."""
    made = {}

    def make(name, *argv):
        code, out, err = d.cli(list(argv))
        assert code == "ok", (argv, err)
        made[name] = out.split()[0]

    make("t", "randn", "[2,3]")
    make("t0", "tensor", "3.5")
    make("ti", "arange", "4")
    make("tb", "tensor", "[true,false]")
    make("te", "zeros", "[0]")
    make("tc", "randn", "[2]", "--dtype", "complex64")
    make("tg", "randn", "[3]", "--requires_grad")
    make("t4", "randn", "[1,2,4,4]")
    make("tm", "ones", "[2]", "--device", "meta")
    make("tbf", "ones", "[2]", "--dtype", "bfloat16")
    make("m", "nn", "linear", "3", "2")
    make("lazy", "nn", "lazy_linear", "3")
    make("tlz", "nn", "parameters", made["lazy"])
    make("opt", "optim", "sgd", made["m"], "--lr", "0.1")
    code, out, _ = d.cli(["sched", "step_lr", made["opt"], "--step_size", "1"])
    if code == "ok":
        made["sched"] = out.split()[0]
    return made


def _make_files(work):
    """Files of every format in `work`, good and damaged (cut, flipped, pickles, a lying .npz, a FIFO,
    /dev/zero, a folder), and the paths the strategies draw: those and a few that are missing or odd."""
    files = {}
    t = torch.arange(6.0).reshape(2, 3)
    torch.save(t, os.path.join(work, "good.pt"))
    np.save(os.path.join(work, "good.npy"), t.numpy())
    np.savez(os.path.join(work, "good.npz"), a=t.numpy())
    from safetensors.torch import save_file
    save_file({"weight": torch.zeros(2, 3), "bias": torch.zeros(2)}, os.path.join(work, "good.safetensors"))
    with open(os.path.join(work, "good.csv"), "w") as f:
        f.write("1,2,3\n4,5,6\n")
    for name in os.listdir(work):
        data = open(os.path.join(work, name), "rb").read()
        stem, ext = os.path.splitext(name)
        files["trunc" + ext] = data[: len(data) // 2]
        files["flip" + ext] = bytes(b ^ 0x5A if i % 7 == 3 else b for i, b in enumerate(data))
    files["pickle.pt"] = pickle.dumps({"a": 1})
    files["pickle.safetensors"] = pickle.dumps([1])
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a.npy", b"\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999,), }"
                   + b" " * 46 + b"\n")
    files["huge.npz"] = buf.getvalue()
    for name, data in files.items():
        with open(os.path.join(work, name), "wb") as f:
            f.write(data)
    os.mkfifo(os.path.join(work, "fifo.npy"))
    os.symlink("/dev/zero", os.path.join(work, "zero.npy"))
    os.mkdir(os.path.join(work, "dir.pt"))
    return sorted(os.listdir(work)) + ["missing.npy", "no/such/x.pt", "out.npy", "out.npz", "out.safetensors",
                                         "out.pt", "out.csv", "bad.ext", "/sys/x.npy", "out"]


# -- values ---------------------------------------------------------------------------------
# Integers past int64 (refused by the parser) and floats past float64. Not 2**62: a legal int64 that big
# makes some constructors loop in Python instead of failing (nn transformer_decoder LAYER 2**62 deep-copies
# the layer 2**62 times); torchsh.guards caps layer counts, and no other loop is known to be safe to draw.
HUGE = st.sampled_from(["99999999999999999999999", "-99999999999999999999999", str(2 ** 63), str(2 ** 64),
                        "9" * 400, "1e999", "-1e999"])
DEEP = st.sampled_from(["[" * 5000 + "]" * 5000, "[" * 150 + "1" + "]" * 150, '{"a":' * 300 + "1" + "}" * 300])
JUNK = st.one_of(
    st.sampled_from(["", " ", "-", "--", "---x", "[", "]", "{", "[1,", "[[1,2],[3]]", '[1,"a"]', "[[[]]]", "[]",
                     '{"a":1}', '{"data":[1],"shape":[9]}', "null", "None", "nan", "inf", "-inf", "NaN", "true",
                     "tensor://", "tensor://zzz00001", "nn://abc", "scope-x", "0x10", "1_000", "1e-400", "½",
                     "\u202e", "a\\nb", "%s", "$HOME", "*", "'", '"', "\\", "cuda", "cuda:1", "mps", "meta",
                     "float8_e4m3fn", "complex32", "sparse_csr"]),
    st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\0/~"), max_size=12),
    HUGE, DEEP)
SMALL_INT = st.integers(-3, 8).map(str)
FLOAT = st.one_of(st.floats(-10, 10, allow_nan=False).map(repr), st.sampled_from(["nan", "inf", "-inf", "1e308",
                                                                                  "0.0", "-0.0", "1e-320"]))
JSON_LIST = st.one_of(
    st.lists(st.integers(-3, 5), max_size=4).map(json.dumps),
    st.lists(st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=3), max_size=3).map(json.dumps),
    st.sampled_from(["[[1,2],[3]]", '[1,"a"]', "[1,[2]]", "[true,1.5]", "[null]", "[[]]", "[1e999]",
                     "[99999999999999999999999]", "2,3", "1,,2", "a,b"]))


def values(d):
    h = d.fixtures
    tensors = [h[k] for k in ("t", "t0", "ti", "tb", "te", "tc", "tg", "t4", "tm", "tbf", "tlz")]
    others = [h[k] for k in ("m", "lazy", "opt", "sched") if k in h]
    return {
        "tensor": st.one_of(st.sampled_from(tensors), SMALL_INT, FLOAT, JSON_LIST),
        "tensors": st.sampled_from(tensors),
        "module": st.sampled_from([h["m"], h["lazy"]]),
        "modules": st.sampled_from([h["m"], h["lazy"]]),
        "optimizer": st.sampled_from([h["opt"]]),
        "scheduler": st.sampled_from(others),
        "handle": st.sampled_from(tensors + others),
        "handles": st.sampled_from(tensors + others),
        "int": st.one_of(SMALL_INT, HUGE),
        "scalar": st.one_of(SMALL_INT, FLOAT, HUGE, st.sampled_from(["true", "false"])),
        "float": st.one_of(FLOAT, HUGE),
        "bool": st.sampled_from(["true", "false", "0", "1", "2"]),
        "int_list": st.one_of(JSON_LIST, SMALL_INT),
        "float_list": JSON_LIST,
        "bool_list": st.sampled_from(["[true,false]", "[1]", "[]"]),
        "str_list": st.sampled_from(["a,b", '["x"]', "[1]", ""]),
        "dtype": st.sampled_from(["float32", "float64", "int64", "bool", "complex64", "bfloat16", "uint16",
                                  "float8_e5m2", "torch.half", "int", "floaty"]),
        "device": st.sampled_from(["cpu", "meta", "cuda", "cuda:0", "cuda:7", "mps", "xpu", "0",
                                   "99999999999999999999", "cpu:1", "tpu"]),
        "layout": st.sampled_from(["strided", "sparse_coo", "jagged"]),
        "memory_format": st.sampled_from(["contiguous_format", "channels_last", "preserve_format"]),
        "str": st.one_of(st.sampled_from(["mean", "sum", "none", "reflect", "linear", "relu", "fro", "ortho"]),
                         st.text("abcxyz_", max_size=6)),
        "path": st.sampled_from(h["paths"]),
        "json": st.one_of(JSON_LIST, DEEP, st.sampled_from(['{"data":[1,2],"shape":[2]}', '{"reduction":"sum"}'])),
        "argv": st.just("true"),
    }


def env_strategy():
    return st.lists(st.sampled_from(["TORCHSH_NO_GRAD=1", "TORCHSH_DEVICE=cuda", "TORCHSH_DEVICE=meta",
                                     "TORCHSH_DEVICE=bogus", "TORCHSH_SCOPE=scope-nope", "TORCHSH_INFERENCE_MODE=yes",
                                     "TORCHSH_DEVICE=cuda:99999999999999999999"]), max_size=2)


SWEEP_EVERY = 250  # requests between sweeps of the objects the fuzzed ops made


def sweep(d):
    if d.counts["requests"] >= d.next_sweep:
        d.sweep(set(v for k, v in d.fixtures.items() if k != "paths"))
        d.next_sweep = d.counts["requests"] + SWEEP_EVERY


def check(d, start, final=False):
    """Fail on the first internal_error or hang since `start` (hypothesis then prints the example), or,
    with TORCHSH_FUZZ_COLLECT=1 (a hunting run), only at the end of the test with all of them."""
    if os.environ.get("TORCHSH_FUZZ_COLLECT") and not final:
        return
    found = d.internal[start:]
    assert not found, "internal_error replies:\n" + "\n".join(repr(x)[:600] for x in found[:40])
    assert not d.hangs, "requests that hung: %r" % d.hangs[:5]
