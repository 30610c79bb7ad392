"""What schemathesis sends for the bodies docs/openapi.json names by format (api/openapi.py: NPY_MEDIA,
BUNDLE_MEDIA, CLI_MEDIA), so that a schema-valid case is a valid body: numeric .npy arrays, a bundle the
daemon exported, a framed /v1/cli request. And a requests session over a daemon's Unix socket."""
import io
import socket

import numpy as np
import requests
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection
from urllib3.connectionpool import HTTPConnectionPool

from torchsh import protocol
from torchsh.api.openapi import BUNDLE_MEDIA, CLI_MEDIA, NPY_MEDIA

BASE = "http://torchd"
# The dtypes the document promises an .npy upload may have: every numeric one numpy and PyTorch share
DTYPES = ("bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float16", "float32",
          "float64", "complex64", "complex128")
# First words of a framed command line: ops that read no file and free nothing (the rest of argv is junk)
CLI_WORDS = ("ones", "zeros", "add", "tensors", "ops", "value", "randn", "arange", "abs", "matmul", "scope")


@st.composite
def npy_bodies(draw):
    array = draw(hnp.arrays(st.sampled_from(DTYPES), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)))
    if draw(st.booleans()):
        array = np.asfortranarray(array)
    f = io.BytesIO()
    np.save(f, array)
    return f.getvalue()


def cli_bodies():
    words = st.text(max_size=12).map(lambda w: w.replace("\0", "").encode())
    argv = st.tuples(st.sampled_from(CLI_WORDS).map(str.encode), st.lists(words, max_size=4)).map(
        lambda t: [t[0]] + t[1])
    stdin = st.none() | st.lists(st.sampled_from([b"1", b"tensor://nope", b""]), max_size=2)
    return st.builds(lambda a, s: protocol.encode_cli_request(a, b"/", True, [], s), argv, stdin)


def register(bundle):
    """Give schemathesis a strategy for each format; `bundle` is one the daemon exported (export_bundle)."""
    import schemathesis
    schemathesis.openapi.media_type(NPY_MEDIA, npy_bodies())
    schemathesis.openapi.media_type(BUNDLE_MEDIA, st.just(bundle))
    schemathesis.openapi.media_type(CLI_MEDIA, cli_bodies())


def export_bundle(session):
    """A bundle of a 2x3 tensor exported from the daemon behind `session`. The fuzz daemon makes it before the
    fuzzers run: after them its RSS may be over its memory budget, and every op refused with out_of_memory."""
    made = session.post(BASE + "/v1/ops/ones", json={"args": [[2, 3]]})
    assert made.status_code == 200, made.text
    return session.post(BASE + "/v1/bundle/export", data=made.json()["result"]).content


class _Connection(HTTPConnection):
    def __init__(self, path, **kw):
        super().__init__("localhost", **kw)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(self.unix_path)


class _Pool(HTTPConnectionPool):
    def __init__(self, path):
        super().__init__("localhost")
        self.unix_path = path

    def _new_conn(self):
        return _Connection(self.unix_path)


class _UnixAdapter(HTTPAdapter):
    def __init__(self, path):
        super().__init__()
        self.pool = _Pool(path)

    def get_connection_with_tls_context(self, request, verify, proxies=None, cert=None):
        return self.pool


def session(path):
    """A requests session whose http://torchd/… requests go to the daemon on Unix socket `path`."""
    s = requests.Session()
    s.mount(BASE, _UnixAdapter(path))
    return s
