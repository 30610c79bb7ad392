"""`torch serve` through real bash, spoken to by plain HTTP clients (http.client over the daemon's Unix socket
and over --port): the KServe V2 routes, answers equal to PyTorch's, batching under concurrent load (read from
the job's metrics), 429 past --max_queue, 503 for what waits at a stop, the token on --port, and a fit that
runs beside a server instead of queueing behind it."""
import http.client
import json
import os
import re
import socket
import stat
import threading

import torch

from support.apicall import UnixHTTPConnection

W = torch.randn(3, 4, generator=torch.Generator().manual_seed(1))
B = torch.randn(3, generator=torch.Generator().manual_seed(2))
X = torch.randn(5, 4, generator=torch.Generator().manual_seed(3))


def request(conn, method, path, doc=None, headers=None):
    """(status, parsed JSON body, headers) of one request on a kept-alive connection."""
    conn.request(method, path, body=None if doc is None else json.dumps(doc), headers=headers or {})
    reply = conn.getresponse()
    return reply.status, json.loads(reply.read()), dict(reply.getheaders())


def binary_request(conn, path, x, outputs_raw=True, headers=None):
    """(status, JSON header, raw tail) of one request with the binary tensor data extension: x's raw floats after
    the JSON header; the outputs asked for raw (outputs_raw) or as JSON."""
    header = json.dumps({"inputs": [{"name": "input__0", "shape": list(x.shape), "datatype": "FP32",
                                     "parameters": {"binary_data_size": x.numel() * 4}}],
                         "parameters": {"binary_data_output": outputs_raw}}).encode()
    conn.request("POST", path, body=header + x.numpy().tobytes(),
                 headers=dict(headers or {}, **{"Inference-Header-Content-Length": str(len(header))}))
    reply = conn.getresponse()
    body, length = reply.read(), reply.getheader("Inference-Header-Content-Length")
    cut = int(length) if length is not None else len(body)
    return reply.status, json.loads(body[:cut]), body[cut:]


def infer_doc(x, **extra):
    return dict({"inputs": [{"name": "input__0", "shape": list(x.shape), "datatype": "FP32",
                             "data": x.reshape(-1).tolist()}]}, **extra)


def served(sh, name, flags=""):
    """A Linear(4, 3) with W, B served as NAME (detached): (job, model handle)."""
    m = sh("torch nn linear 4 3")
    sh("torch nn load %s %s" % (m, _weights(sh)))
    return sh("torch serve %s --name %s --detach %s" % (m, name, flags)), m


def _weights(sh):
    from safetensors.torch import save_file
    path = sh.tmp("w.safetensors")
    save_file({"weight": W, "bias": B}, path)
    return path


def final_row(sh, job):
    sh("torch job stop %s" % job)
    return json.loads(sh("torch job logs %s --json" % job).splitlines()[-1])


def test_v2_routes_over_the_unix_socket_answer_as_pytorch(sh):
    job, _ = served(sh, "lin")
    conn = UnixHTTPConnection(sh.socket)
    assert request(conn, "GET", "/v2/health/ready")[:2] == (200, {"ready": True})
    assert request(conn, "GET", "/v2")[1]["name"] == "torchsh"
    assert request(conn, "GET", "/v2/models/lin/ready")[:2] == (200, {"name": "lin", "ready": True})
    assert request(conn, "GET", "/v2/models/lin")[1]["inputs"][0]["datatype"] == "FP32"
    status, out, _ = request(conn, "POST", "/v2/models/lin/infer", infer_doc(X, id="r1"))
    assert status == 200 and out["id"] == "r1" and out["model_name"] == "lin"
    (output,) = out["outputs"]
    assert output["name"] == "output__0" and output["shape"] == [5, 3] and output["datatype"] == "FP32"
    torch.testing.assert_close(torch.tensor(output["data"]).reshape(5, 3), torch.nn.functional.linear(X, W, B))
    status, out, _ = request(conn, "POST", "/v2/models/lin/versions/1/infer", infer_doc(X[:1]))
    assert status == 200 and out["outputs"][0]["shape"] == [1, 3]
    status, out, _ = request(conn, "POST", "/v2/models/nope/infer", infer_doc(X))
    assert status == 404 and out["code"] == "unknown_model" and "lin" in out["error"]
    bad = infer_doc(X)
    bad["inputs"][0]["shape"] = [5, 5]
    status, out, _ = request(conn, "POST", "/v2/models/lin/infer", bad)
    assert status == 400 and out["code"] == "bad_argument" and "needs 25 values" in out["error"]
    row = final_row(sh, job)
    assert (row["requests"], row["errors"], row["batches"]) == (3, 1, 2)


def test_concurrent_requests_are_batched(sh):
    job, _ = served(sh, "batched", "--max_batch 16 --max_wait_ms 200")
    answers = []

    def client(binary):  # JSON and binary requests of the same shape batch together
        conn = UnixHTTPConnection(sh.socket)
        send = binary_request if binary else lambda c, path, x: request(c, "POST", path, infer_doc(x))
        answers.append(send(conn, "/v2/models/batched/infer", X[:2])[0])
    threads = [threading.Thread(target=client, args=(i % 2 == 0,)) for i in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == [200] * 32
    row = final_row(sh, job)
    assert row["requests"] == 32 and row["max_batch"] > 1 and row["batches"] < 32
    assert row["p50_ms"] is not None and row["p99_ms"] >= row["p50_ms"]


def test_binary_tensors_in_and_out_answer_as_pytorch_on_the_socket_and_the_port(sh):
    job, _ = served(sh, "bin", "--port 0 --threads 1")
    conn, path, expected = UnixHTTPConnection(sh.socket), "/v2/models/bin/infer", torch.nn.functional.linear(X, W, B)
    assert request(conn, "GET", "/v2")[1]["extensions"] == ["binary_tensor_data"]
    status, header, raw = binary_request(conn, path, X)  # raw in, raw out
    (output,) = header["outputs"]
    assert status == 200 and output["shape"] == [5, 3] and output["parameters"] == {"binary_data_size": 60}
    torch.testing.assert_close(torch.frombuffer(bytearray(raw), dtype=torch.float32).reshape(5, 3), expected)
    status, header, raw = binary_request(conn, path, X, outputs_raw=False)  # raw in, JSON out
    assert status == 200 and raw == b"" and "parameters" not in header["outputs"][0]
    torch.testing.assert_close(torch.tensor(header["outputs"][0]["data"]).reshape(5, 3), expected)
    asked = infer_doc(X, outputs=[{"name": "output__0", "parameters": {"binary_data": True}}])  # JSON in, raw out
    conn.request("POST", path, body=json.dumps(asked))
    reply = conn.getresponse()
    body, cut = reply.read(), int(reply.getheader("Inference-Header-Content-Length"))
    torch.testing.assert_close(torch.frombuffer(bytearray(body[cut:]), dtype=torch.float32).reshape(5, 3), expected)
    big = torch.randn(100_000, 4, generator=torch.Generator().manual_seed(4))  # 1.6 MB: the loop's own body buffer
    status, header, raw = binary_request(conn, path, big)
    torch.testing.assert_close(torch.frombuffer(bytearray(raw), dtype=torch.float32).reshape(-1, 3),
                               torch.nn.functional.linear(big, W, B))
    said = sh.run("torch job logs %s" % job).err
    port, token_file = re.search(r":(\d+) \(header Authorization: Bearer \$\(cat ([^)\s]+)\)", said).groups()
    with open(token_file) as f:
        auth = {"Authorization": "Bearer " + f.read().strip()}
    on_port = http.client.HTTPConnection("127.0.0.1", int(port), timeout=60)
    status, _, raw = binary_request(on_port, path, X, headers=auth)
    assert status == 200
    torch.testing.assert_close(torch.frombuffer(bytearray(raw), dtype=torch.float32).reshape(5, 3), expected)
    row = final_row(sh, job)
    assert (row["requests"], row["errors"]) == (5, 0)


def test_a_binary_body_whose_lengths_do_not_add_up_gets_400_with_a_v2_error(sh):
    job, _ = served(sh, "binbad")
    path, header = "/v2/models/binbad/infer", json.dumps({"inputs": [{"name": "input__0", "shape": [1, 4],
                                                                     "datatype": "FP32",
                                                                     "parameters": {"binary_data_size": 16}}]})
    for length, tail, words in ((len(header) + 17, b"\0" * 16, "not a length within"),
                                ("x%d" % len(header), b"\0" * 16, "not a length within"),
                                (len(header), b"\0" * 12, "runs past"),
                                (len(header), b"\0" * 20, "add up to 16 bytes, but 20")):
        conn = UnixHTTPConnection(sh.socket)
        conn.request("POST", path, body=header.encode() + tail,
                     headers={"Inference-Header-Content-Length": str(length)})
        reply = conn.getresponse()
        out = json.loads(reply.read())
        assert (reply.status, out["code"]) == (400, "bad_argument") and words in out["error"], out
    row = final_row(sh, job)
    assert (row["requests"], row["errors"]) == (4, 4)


def _until_queued(sh, job, n):
    """Wait until `torch job list` says N requests wait in the model's queue."""
    for _ in range(600):
        if "%d waiting" % n in sh("torch job list"):
            return
        sh("sleep 0.05")
    raise AssertionError(sh("torch job list"))


def _send_later(sh, name, out):
    def client():
        out.append(request(UnixHTTPConnection(sh.socket), "POST", "/v2/models/%s/infer" % name, infer_doc(X[:1])))
    t = threading.Thread(target=client)
    t.start()
    return t


def test_past_max_queue_a_request_gets_429_with_retry_after(sh):
    # a batch waits 60 s for its 8 requests: the first two stay queued while the third comes
    job, _ = served(sh, "small", "--max_batch 8 --max_wait_ms 60000 --max_queue 2")
    waiting = []
    threads = [_send_later(sh, "small", waiting) for _ in range(2)]
    _until_queued(sh, job, 2)
    status, out, headers = request(UnixHTTPConnection(sh.socket), "POST", "/v2/models/small/infer", infer_doc(X[:1]))
    assert status == 429 and out["code"] == "queue_full" and headers["Retry-After"] == "1"
    sh("torch job stop %s" % job)  # what waits is refused at the stop
    for t in threads:
        t.join()
    assert [(s, o["code"]) for s, o, _ in waiting] == [(503, "not_serving")] * 2
    assert final_row(sh, job)["rejected"] == 1


def test_port_serves_v2_with_the_daemons_token_only(sh):
    job, _ = served(sh, "onport", "--port 0")
    said = sh.run("torch job logs %s" % job).err
    port = int(re.search(r"http://127\.0\.0\.1:(\d+)", said).group(1))
    token_file = re.search(r"\$\(cat ([^)\s]+)\)", said).group(1)
    assert stat.S_IMODE(os.lstat(token_file).st_mode) == 0o600
    with open(token_file) as f:
        token = f.read().strip()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    status, out, _ = request(conn, "POST", "/v2/models/onport/infer", infer_doc(X))
    assert status == 403 and out["code"] == "token_refused"
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    auth = {"Authorization": "Bearer " + token}
    assert request(conn, "GET", "/v2/models/onport/ready", headers=auth)[0] == 200
    status, out, _ = request(conn, "POST", "/v2/models/onport/infer", infer_doc(X), headers=auth)
    assert status == 200
    torch.testing.assert_close(torch.tensor(out["outputs"][0]["data"]).reshape(5, 3), torch.nn.functional.linear(X, W, B))
    for header, status in ((b"", b"403"), (b"Authorization: Bearer %s\r\n" % token.encode(), b"413")):
        raw = socket.create_connection(("127.0.0.1", port), timeout=60)  # a body over the cap: refused from its head,
        raw.sendall(b"POST /v2/models/onport/infer HTTP/1.1\r\n%sContent-Length: %d\r\n\r\n" % (header, 1 << 30))
        assert raw.makefile("rb").readline().startswith(b"HTTP/1.1 %s " % status)  # the token's first
        raw.close()
    sh("torch job stop %s" % job)
    refused = socket.socket()
    assert refused.connect_ex(("127.0.0.1", port)) != 0  # the port closes with its job
    refused.close()


def test_refusals_name_freeing_the_model_and_bad_numbers(sh):
    job, m = served(sh, "once")
    r = sh.run("torch serve %s --name once --detach" % m)
    assert r.code == 3 and "[name_in_use]" in r.err
    r = sh.run("torch free %s" % m)
    assert r.code != 0 and "[in_use]" in r.err
    assert "once" in sh("torch job stop %s" % job)
    r = sh.run("torch serve %s --name other --max_batch 0 --detach" % m)
    assert r.code == 2 and "[bad_argument]" in r.err
    r = sh.run("torch serve %s --name other --threads 0 --detach" % m)
    assert r.code == 2 and "--threads" in r.err
    for flags, words in (("--port 70000", "0 to 65535"), ("--port -1", "0 to 65535"), ("--port abc", "--port"),
                         ("--max_wait_ms 1e12", "0 to 60000"), ("--max_wait_ms nan", "0 to 60000"),
                         ("--max_wait_ms -1", "0 to 60000")):
        r = sh.run("torch serve %s --name other %s --detach" % (m, flags))
        assert r.code == 2 and "[bad_argument]" in r.err and words in r.err, (flags, r.err)


def test_a_fit_runs_beside_a_server_not_queued_behind_it(sh):
    job, m = served(sh, "beside")
    r = sh.run("m2=$(torch nn linear 4 3); o=$(torch optim sgd $m2 --lr 0.1); "
               "L=$(torch data loader $(torch data tensors $(torch randn 64 4) $(torch randn 64 3)) --batch_size 16); "
               "torch fit $m2 $o $L --loss mse_loss --epochs 2")
    assert r.code == 0 and "queued" not in r.err and len(r.out.splitlines()) == 3
    status, _, _ = request(UnixHTTPConnection(sh.socket), "POST", "/v2/models/beside/infer", infer_doc(X))
    assert status == 200
    sh("torch job stop %s" % job)


def test_an_idle_server_keeps_its_daemon_past_the_ttl_and_daemon_stop_ends_it(fresh_sh):
    s = fresh_sh(start=False)
    job = s("m=$(torch nn linear 4 3); torch serve $m --name idle --detach", env={"TORCHSH_TTL": "1s"})
    s("sleep 3")  # three idle timeouts: the serve job keeps the daemon
    assert "running" in s("torch job list")
    assert request(UnixHTTPConnection(s.socket), "GET", "/v2/models/idle/ready")[0] == 200
    s("torch daemon stop")
    assert s.run("torch daemon status").code == 5, job


def test_a_failing_batch_answers_its_requests_and_the_server_goes_on(sh):
    job, _ = served(sh, "strict")
    conn = UnixHTTPConnection(sh.socket)
    status, out, _ = request(conn, "POST", "/v2/models/strict/infer", infer_doc(torch.ones(2, 5)))  # 5 features, not 4
    assert status == 422 and out["code"] == "shape_mismatch"
    assert request(conn, "POST", "/v2/models/strict/infer", infer_doc(X))[0] == 200
    flat = sh("torch nn flatten --start_dim 0")  # its output loses the batch dimension
    flat_job = sh("torch serve %s --name flat --detach" % flat)
    status, out, _ = request(conn, "POST", "/v2/models/flat/infer", infer_doc(X))
    assert status == 422 and "batch dimension" in out["error"]
    assert final_row(sh, job)["errors"] == 1 and final_row(sh, flat_job)["errors"] == 1


def test_a_body_nested_deeper_than_1024_levels_is_400_on_the_socket_and_the_port(sh):
    job, _ = served(sh, "deep", "--port 0")
    said = sh.run("torch job logs %s" % job).err
    port = int(re.search(r"http://127\.0\.0\.1:(\d+)", said).group(1))
    with open(re.search(r"\$\(cat ([^)\s]+)\)", said).group(1)) as f:
        auth = {"Authorization": "Bearer " + f.read().strip()}
    for depth in (1025, 100000):  # orjson's limit, and far past the interpreter's recursion limit
        body = '{"inputs": [{"name": "input__0", "shape": [1, 4], "datatype": "FP32", "data": %s}]}' % (
            "[" * depth + "]" * depth)
        for conn, headers in ((UnixHTTPConnection(sh.socket), {}),
                              (http.client.HTTPConnection("127.0.0.1", port, timeout=60), auth)):
            conn.request("POST", "/v2/models/deep/infer", body=body, headers=headers)
            reply = conn.getresponse()
            out = json.loads(reply.read())
            assert (reply.status, out["code"]) == (400, "bad_argument") and "nested too deeply" in out["error"]
    sh("torch job stop %s" % job)


def test_a_detached_server_says_where_it_serves_and_the_token_file_on_stderr(sh):
    r = sh.run("m=$(torch nn linear 4 3); j=$(torch serve $m --name said --port 0 --detach); echo $j; torch job stop $j")
    assert r.code == 0 and r.out.startswith("job://"), r.err
    assert "torch: serve: serving said: POST /v2/models/said/infer on the daemon's socket %s" % sh.socket in r.err
    assert re.search(r"and on http://127\.0\.0\.1:\d+ \(header Authorization: Bearer \$\(cat \S+\.serve\.token\)\)", r.err)
