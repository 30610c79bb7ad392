"""`torch serve --port P --host ADDR` beyond loopback: the port speaks only TLS, with the daemon's own
certificate, and still wants the daemon's token (serve/tcp.py), spoken to by http.client as any V2 client."""
import http.client
import re
import socket
import ssl

import torch

from test_serve import B, W, X, infer_doc, request, served


def test_beyond_loopback_the_port_speaks_tls_with_the_daemons_certificate_and_wants_the_token(sh):
    job, _ = served(sh, "overtls", "--port 0 --host 0.0.0.0")
    said = sh.run("torch job logs %s" % job).err
    port = int(re.search(r"https://0\.0\.0\.0:(\d+)", said).group(1))
    crt = re.search(r"certificate (\S+) \(SHA256:", said).group(1)
    with open(re.search(r"\$\(cat ([^)\s]+)\)", said).group(1)) as f:
        auth = {"Authorization": "Bearer " + f.read().strip()}
    plain = http.client.HTTPConnection("127.0.0.1", port, timeout=60)  # no HTTP before a handshake
    try:
        plain.request("GET", "/v2/health/ready", headers=auth)
        plain.getresponse()
        assert False, "plain HTTP was answered"
    except (http.client.HTTPException, OSError):
        pass
    pinned = ssl.create_default_context(cafile=crt)  # as `curl --cacert CRT --resolve torchd:PORT:HOST`

    def connection():
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=60, context=pinned)
        conn.sock = pinned.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=60),
                                       server_hostname="torchd")  # the certificate's name, checked
        return conn
    status, out, headers = request(connection(), "POST", "/v2/models/overtls/infer", infer_doc(X))
    assert status == 403 and out["code"] == "token_refused" and headers["Connection"] == "close"
    conn = connection()  # a refused connection is closed: nothing more is read from a caller without the token
    status, out, _ = request(conn, "POST", "/v2/models/overtls/infer", infer_doc(X), headers=auth)
    assert status == 200
    torch.testing.assert_close(torch.tensor(out["outputs"][0]["data"]).reshape(5, 3),
                               torch.nn.functional.linear(X, W, B))
    stranger = ssl.create_default_context()  # a client that trusts only public CAs refuses it
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as raw:
            stranger.wrap_socket(raw, server_hostname="torchd")
        assert False, "a self-signed certificate was trusted"
    except ssl.SSLCertVerificationError:
        pass
    sh("torch job stop %s" % job)
