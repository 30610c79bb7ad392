"""Fuzzing the daemon: no request may come back as internal_error, hang, or kill it.

Fuzzers against one test daemon of their own, over its Unix socket:
- hypothesis over /v1/cli argv: op names and argument kinds drawn from the op table (GET /v1/ops),
  values per kind (handles of every kind, small and huge numbers, ragged, mixed and 5,000-deep
  JSON, devices, dtypes, junk, flags, `--`), sometimes with stdin lines;
- hypothesis over the JSON API, POST /v1/ops/{op} bodies with well- and ill-typed fields;
- schemathesis over docs/openapi.json (every path and method), its cases sent over the socket.
A fourth fuzzes damaged files (cut, flipped, spliced) through load, nn load and checkpoint load,
and a few cases go through real bash. The daemon's memory is capped (RLIMIT_AS, plus its own
budget), so an op asked for a huge result fails fast instead of swapping.

Bounded: TORCHSH_FUZZ_EXAMPLES (default 10000) CLI examples, half that for the API, a fifth for files,
1000 for schemathesis (TORCHSH_FUZZ_SCHEMA_EXAMPLES), each test also capped by TORCHSH_FUZZ_SECONDS
(default 150, split between the tests): about a minute on 2 cores for ~20,000 requests. The counts
by code are printed (pytest -s) and written to fuzz-counts.json in the pytest temp folder (and to
$TORCHSH_FUZZ_COUNTS if set). TORCHSH_FUZZ_COLLECT=1 reports every internal_error at the end of each
test instead of stopping at the first (for hunting runs with bigger budgets).
"""
import io
import json
import os
import pickle
import resource
import shutil
import tempfile
import time
import zipfile

import numpy as np
import pytest
import torch

pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

import openapi_media  # noqa: E402
from conftest import Shell, stop_daemon  # noqa: E402
from unixhttp import Daemon  # noqa: E402

pytestmark = pytest.mark.slow  # a slow family (the tier rule: tests/conftest.py)

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
    made["paths"] = sorted(os.listdir(work)) + ["missing.npy", "no/such/x.pt", "out.npy", "out.npz", "out.safetensors",
                                                "out.pt", "out.csv", "bad.ext", "/sys/x.npy", "out"]
    return made


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


def _values(d):
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


def _argv_strategy(d):
    values = _values(d)
    ops = [op for op in d.table if op["name"] not in EXCLUDED]

    @st.composite
    def argv(draw):
        op = draw(st.sampled_from(ops))
        overload = draw(st.sampled_from(op["overloads"])) if op["overloads"] else {"args": []}
        words = op["name"].split(".")
        positional = [a for a in overload["args"] if not a["keyword_only"]]
        keyword = [a for a in overload["args"] if a["keyword_only"] or not a["required"]]
        required = len([a for a in positional if a["required"]])
        n = draw(st.sampled_from([required, required, required, len(positional), required - 1, len(positional) + 1]))
        for i in range(n):
            kind = positional[i]["kind"] if i < len(positional) else "tensor"
            if kind == "argv":
                words += ["--", "true"]
                break
            words.append(draw(st.one_of(values.get(kind, JUNK), JUNK) if draw(st.integers(0, 9)) == 0
                              else values.get(kind, JUNK)))
        for a in draw(st.lists(st.sampled_from(keyword), max_size=2, unique_by=lambda a: a["name"])) if keyword else []:
            if a["kind"] == "argv":
                continue
            flag = "--" + a["name"]
            value = draw(values.get(a["kind"], JUNK) if draw(st.integers(0, 5)) else JUNK)
            words += [flag + "=" + value] if draw(st.booleans()) else [flag, value]
        extra = draw(st.sampled_from([[], [], [], [], ["--json"], ["--no_grad"], ["--inference_mode"], ["--help"],
                                      ["--bogus", "1"], ["--"], ["1"]]))
        return words + extra
    return argv()


def _env_strategy():
    return st.lists(st.sampled_from(["TORCHSH_NO_GRAD=1", "TORCHSH_DEVICE=cuda", "TORCHSH_DEVICE=meta",
                                     "TORCHSH_DEVICE=bogus", "TORCHSH_SCOPE=scope-nope", "TORCHSH_INFERENCE_MODE=yes",
                                     "TORCHSH_DEVICE=cuda:99999999999999999999"]), max_size=2)


SWEEP_EVERY = 250  # requests between sweeps of the objects the fuzzed ops made


def _sweep(d):
    if d.counts["requests"] >= d.next_sweep:
        d.sweep(set(v for k, v in d.fixtures.items() if k != "paths"))
        d.next_sweep = d.counts["requests"] + SWEEP_EVERY


def _check(d, start, final=False):
    """Fail on the first internal_error or hang since `start` (hypothesis then prints the example), or,
    with TORCHSH_FUZZ_COLLECT=1 (a hunting run), only at the end of the test with all of them."""
    if os.environ.get("TORCHSH_FUZZ_COLLECT") and not final:
        return
    found = d.internal[start:]
    assert not found, "internal_error replies:\n" + "\n".join(repr(x)[:600] for x in found[:40])
    assert not d.hangs, "requests that hung: %r" % d.hangs[:5]


def test_fuzzed_command_lines_never_get_internal_error(fuzz):
    d = fuzz
    start = len(d.internal)
    deadline = time.monotonic() + float(os.environ.get("TORCHSH_FUZZ_SECONDS", "150"))

    @settings(max_examples=EXAMPLES, **SETTINGS)
    @given(argv=_argv_strategy(d), env=_env_strategy(), stdin=st.none() | st.lists(
        st.sampled_from([d.fixtures["t"], d.fixtures["m"], "junk", "[1,2]", "", "tensor://zzz00001"]), max_size=3))
    def run(argv, env, stdin):
        if time.monotonic() > deadline:
            return
        d.cli(argv, env, stdin, tty=stdin is None)
        _check(d, start)
        _sweep(d)
    run()
    _check(d, start, final=True)
    assert d.status()["pid"] == d.pid


def _body_strategy(d):
    values = _values(d)
    anything = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                       max_size=3), max_leaves=8)

    def as_json(word):
        try:
            return json.loads(word)
        except (ValueError, RecursionError):  # junk and 5,000-deep JSON go as strings
            return word

    @st.composite
    def body(draw):
        op = draw(st.sampled_from([op for op in d.table if op["name"] not in EXCLUDED]))
        overload = draw(st.sampled_from(op["overloads"])) if op["overloads"] else {"args": []}
        args = [as_json(draw(values.get(a["kind"], JUNK))) for a in overload["args"]
                if not a["keyword_only"] and a["kind"] != "argv"][: draw(st.integers(0, 4))]
        kwargs = {a["name"]: as_json(draw(values.get(a["kind"], JUNK))) for a in overload["args"]
                  if a["keyword_only"] and a["kind"] != "argv" and draw(st.integers(0, 3)) == 0}
        fields = {"args": args, "kwargs": kwargs}
        if draw(st.integers(0, 3)) == 0:  # type confusion: any field, any JSON value
            fields[draw(st.sampled_from(["args", "kwargs", "tensors", "env", "cwd", "no_grad", "exec",
                                         "inference_mode"]))] = draw(anything)
        if draw(st.integers(0, 5)) == 0:
            fields["env"] = dict(e.split("=", 1) for e in draw(_env_strategy()))
        raw = json.dumps(fields).encode()
        if draw(st.integers(0, 12)) == 0:
            raw = draw(st.sampled_from([b"", b"[]", b"null", b"{", b"\xff\xfe", raw[: len(raw) // 2], b"1" * 5000,
                                        b'{"args":' + b"[" * 5000 + b"]" * 5000 + b"}"]))
        return op["name"], raw
    return body()


def test_fuzzed_json_api_bodies_never_get_internal_error(fuzz):
    d = fuzz
    start = len(d.internal)
    deadline = time.monotonic() + float(os.environ.get("TORCHSH_FUZZ_SECONDS", "150")) / 2

    handles = [v for k, v in d.fixtures.items() if k != "paths"]
    downloads = st.tuples(st.sampled_from(handles), st.sampled_from(["", "?format=json", "?format=npy", "?format="]))

    @settings(max_examples=max(EXAMPLES // 2, 1), **SETTINGS)
    @given(case=_body_strategy(d), download=st.none() | downloads)
    def run(case, download):
        if time.monotonic() > deadline:
            return
        name, raw = case
        d.call("POST", "/v1/ops/" + name, raw, {"Content-Type": "application/json"})
        if download:
            d.call("GET", "/v1/tensors/%s%s" % download)
        _check(d, start)
        _sweep(d)
    run()
    _check(d, start, final=True)
    assert d.status()["pid"] == d.pid


def test_schemathesis_cases_from_the_openapi_document_never_get_internal_error(fuzz):
    schemathesis = pytest.importorskip("schemathesis")
    d = fuzz
    start = len(d.internal)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    openapi_media.register(d.bundle)  # .npy, bundle and /v1/cli bodies, well formed
    schema = schemathesis.openapi.from_path(os.path.join(root, "docs", "openapi.json"))
    strategies = []
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.method.upper() == "DELETE":
            continue  # frees the fixtures; DELETE of junk handles is covered by the CLI fuzzer's `free`-free set
        strategies.append(operation.as_strategy())
    deadline = time.monotonic() + float(os.environ.get("TORCHSH_FUZZ_SECONDS", "150")) / 2

    @settings(max_examples=int(os.environ.get("TORCHSH_FUZZ_SCHEMA_EXAMPLES", "1000")), **SETTINGS)
    @given(case=st.one_of(strategies))
    def run(case):
        if time.monotonic() > deadline:
            return
        path = case.formatted_path
        if case.query:
            from urllib.parse import urlencode
            path += "?" + urlencode(case.query, doseq=True)
        body = case.body
        if body is None or _is_unset(body):
            raw = b""
        elif isinstance(body, (bytes, bytearray)):
            raw = bytes(body)
        else:
            raw = json.dumps(body).encode()
        if path.startswith("/v1/ops/") and case.method.upper() == "POST" and path.split("/")[3].split("?")[0] in EXCLUDED:
            return
        if path.startswith("/v1/cli"):
            return  # /v1/cli takes NUL-framed argv, fuzzed above; a schema-made body is just a bad_request
        d.call(case.method.upper(), path, raw, {"Content-Type": case.media_type or "application/json"})
        _check(d, start)
        _sweep(d)
    run()
    _check(d, start, final=True)
    assert d.status()["pid"] == d.pid


def _is_unset(value):
    return type(value).__name__ in ("NotSet", "Unset")


def test_a_few_fuzz_cases_through_real_bash(fuzz):
    """The same families through the real client and bash quoting: structured lines, the right exit codes."""
    fuzz.next_sweep = 0
    _sweep(fuzz)
    s = Shell(fuzz.socket_path, fuzz.cwd)
    here = os.path.join(fuzz.cwd, "bash-cases")  # files of its own: the fuzzed `save` may overwrite the others
    os.mkdir(here)
    os.mkfifo(os.path.join(here, "fifo.npy"))
    os.symlink("/dev/zero", os.path.join(here, "zero.npy"))
    buf = io.BytesIO()
    np.savez(buf, a=np.arange(10))
    with open(os.path.join(here, "trunc.npz"), "wb") as f:
        f.write(buf.getvalue()[:60])
    with open(os.path.join(here, "pickle.pt"), "wb") as f:
        f.write(pickle.dumps({"a": 1}))
    for script, code in (("torch abs 99999999999999999999999", 2), ("torch tensor '[[1,2],[3]]'", 2),
                         ("torch tensor \"$(python3 -c \"print('['*5000+']'*5000)\")\"", 2),
                         ("torch ones '[2]' --device cuda", 4 if not torch.cuda.is_available() else 0),
                         ("torch load fifo.npy", 6), ("torch load zero.npy", 6), ("torch load trunc.npz", 6),
                         ("torch load pickle.pt", 6), ("torch save %s /nonexistent/x.npy" % fuzz.fixtures["t"], 6),
                         # a guard's own check of the inputs (binomial's count) on a lazy module's parameter
                         ("torch binomial %s -3" % fuzz.fixtures["tlz"], 4)):
        r = s.run(script, cwd=here, timeout=60)
        assert r.code == code, (script, r.err)
        if code:
            line = r.err.strip()
            assert "\n" not in line and line.startswith("torch: ") and "[internal_error]" not in line, line
    assert fuzz.status()["pid"] == fuzz.pid


def test_fuzzed_files_never_get_internal_error(fuzz):
    """Damaged files of every format (cut, bytes flipped, headers spliced) through load, nn load, checkpoint load."""
    d = fuzz
    start = len(d.internal)
    goods = {ext: open(os.path.join(d.cwd, "good" + ext), "rb").read()
             for ext in (".npy", ".npz", ".safetensors", ".pt", ".csv")}
    deadline = time.monotonic() + float(os.environ.get("TORCHSH_FUZZ_SECONDS", "150")) / 3

    @st.composite
    def damaged(draw):
        ext = draw(st.sampled_from(sorted(goods)))
        data = bytearray(goods[draw(st.sampled_from(sorted(goods)))] if draw(st.integers(0, 4)) == 0 else goods[ext])
        for _ in range(draw(st.integers(1, 4))):
            what = draw(st.sampled_from(["cut", "flip", "insert", "digits"]))
            at = draw(st.integers(0, max(len(data) - 1, 0)))
            if what == "cut":
                del data[at:]
            elif what == "flip" and data:
                data[at] = draw(st.integers(0, 255))
            elif what == "insert":
                data[at:at] = draw(st.binary(max_size=16))
            else:  # make a size or shape field huge
                data[at:at + 1] = b"99999999999"
        return ext, bytes(data)

    @settings(max_examples=max(EXAMPLES // 5, 1), **SETTINGS)
    @given(case=damaged(), verb=st.sampled_from(["load", "nn load", "checkpoint load"]))
    def run(case, verb):
        if time.monotonic() > deadline:
            return
        ext, data = case
        name = "fz" + ext
        with open(os.path.join(d.cwd, name), "wb") as f:
            f.write(data)
        if verb == "load":
            d.cli(["load", name])
        elif ext in (".safetensors", ".pt"):
            argv = ["nn", "load", d.fixtures["m"], name] if verb == "nn load" else \
                ["checkpoint", "load", name, d.fixtures["m"], d.fixtures["opt"]]
            d.cli(argv)
        _check(d, start)
        _sweep(d)
    run()
    _check(d, start, final=True)
    assert d.status()["pid"] == d.pid
