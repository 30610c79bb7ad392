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
import time

import numpy as np
import pytest
import torch

pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

import openapi_media  # noqa: E402
from conftest import Shell  # noqa: E402
from fuzzing import (EXAMPLES, EXCLUDED, JUNK, SETTINGS, check as _check, env_strategy as _env_strategy,  # noqa: E402
                     fuzz, sweep as _sweep, values as _values)  # noqa: F401  (fuzz is a fixture)

pytestmark = pytest.mark.slow  # a slow family (the tier rule: tests/conftest.py)


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
