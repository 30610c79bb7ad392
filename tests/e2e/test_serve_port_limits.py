"""`torch serve --port` against callers without the token (issue 35 §4): another local user (a second real
uid) holding every connection the port lets wait for a token, dripping a byte a second from several
addresses and opening a new one for each that is cut, while the token's holder infers, answered as PyTorch
would; and past the port's slots, a 503 with Retry-After for every connection refused, never a reset."""
import json
import re
import socket
import threading

import pytest
import torch

from test_serve import B, W, X, infer_doc, served
from support.twouid import other_user, run_as  # noqa: F401  (other_user is a fixture)
from support.waiting import wait_until
from torchsh.serve import tcp

# The other user: N connections without the token, PER_PEER from each of 127.0.0.2, .3, …, a byte a second on
# each, a new one for each that closes, for SECONDS; it prints what the port answered them.
SQUATTER = r'''
import json, socket, sys, time
port, n, per_peer, seconds = map(int, sys.argv[1:5])
conns, answers, opened = {}, {}, 0
deadline = time.monotonic() + seconds
while time.monotonic() < deadline:
    for i in range(n):
        if i not in conns:
            s = socket.socket()
            s.bind(("127.0.0.%d" % (2 + i // per_peer), 0))
            s.connect(("127.0.0.1", port))
            s.setblocking(False)
            conns[i], opened = s, opened + 1
    for i, s in list(conns.items()):
        try:
            s.send(b"G")
            got = s.recv(4096)
        except BlockingIOError:
            continue
        except OSError as e:
            got = b"reset" if isinstance(e, ConnectionResetError) else b""
        status = got.split(b" ")[1].decode() if got.startswith(b"HTTP/1.1 ") else got.decode() or "closed"
        answers[status] = answers.get(status, 0) + 1
        s.close()
        del conns[i]
    time.sleep(1)
print(json.dumps({"opened": opened, "answers": answers}))
'''


def port_and_token(sh, job):
    said = sh.run("torch job logs %s" % job).err
    port = int(re.search(r"http://127\.0\.0\.1:(\d+)", said).group(1))
    with open(re.search(r"\$\(cat ([^)\s]+)\)", said).group(1)) as f:
        return port, f.read().strip()


def serve_door(sh):
    doors = json.loads(sh("torch daemon status --json"))["doors"]
    return next(d for d in doors if d["kind"] == "serve")


def infer(port, token):
    """One inference on a new connection: (status, outputs)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        body = json.dumps(infer_doc(X)).encode()
        s.sendall(b"POST /v2/models/held/infer HTTP/1.1\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n"
                  b"Connection: close\r\n\r\n%s" % (token.encode(), len(body), body))
        reply = b""
        while chunk := s.recv(1 << 16):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(body).get("outputs")


@pytest.mark.slow
def test_another_user_without_the_token_cannot_lock_its_holder_out(sh, other_user):
    job, _ = served(sh, "held", "--port 0")
    port, token = port_and_token(sh, job)
    answered = []

    def holder():  # once the other user holds every waiting place: twenty inferences, each on a new connection
        if wait_until(lambda: serve_door(sh)["waiting"] >= tcp.WAITING - tcp.PER_PEER, timeout=30):
            answered.extend(infer(port, token) for _ in range(20))
    thread = threading.Thread(target=holder)
    thread.start()
    squatter = run_as(other_user, ["/usr/bin/python3", "-I", "-c", SQUATTER, str(port), str(tcp.WAITING),
                                   str(tcp.PER_PEER), "8"])
    thread.join(60)
    assert squatter.returncode == 0, squatter.stderr
    seen = json.loads(squatter.stdout)
    assert len(answered) == 20 and all(status == 200 for status, _ in answered), (answered, seen)
    for _, outputs in answered:
        torch.testing.assert_close(torch.tensor(outputs[0]["data"]).reshape(5, 3), torch.nn.functional.linear(X, W, B))
    # what the port told the other user: pushed out (503) or cut at the head deadline (408); never a reset
    assert set(seen["answers"]) <= {"503", "408"} and seen["opened"] > tcp.WAITING, seen
    sh("torch job stop %s" % job)


def test_past_the_ports_slots_each_connection_refused_reads_503_with_retry_after(sh):
    job, _ = served(sh, "full", "--port 0")
    port, token = port_and_token(sh, job)
    body = json.dumps(infer_doc(X)).encode().ljust(1 << 16)  # more than the head: a refusal leaves it unread
    ask = b"POST /v2/models/full/infer HTTP/1.1\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s" % (
        token.encode(), len(body), body)
    held, replies = [], []
    try:
        for _ in range(tcp.SLOTS + 20):  # closing with its body unread would reset it: drained, it reads the 503
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.sendall(ask)
            held.append(s)
            replies.append(s.recv(4096))
        statuses = [r.split(b" ")[1] for r in replies]
        assert statuses.count(b"200") == tcp.SLOTS and statuses.count(b"503") == 20, statuses
        assert all(b"Retry-After: 1\r\n" in r and b'"code":"overloaded"' in r for r in replies if b" 503 " in r)
    finally:
        for s in held:
            s.close()
    sh("torch job stop %s" % job)
