"""A daemon's App in the test's own process, no socket served, and requests dispatched to its routes: handler
tests without a daemon. Use: `app = pytest.fixture(scope="module")(inprocess.app)` and inprocess.request(app, raw)."""
import tempfile

from torchsh.daemon.app import App
from torchsh.daemon.routes import dispatch
from torchsh.wire import http


def app():
    """A generator fixture: the App, its staging folder closed after."""
    a = App(tempfile.mktemp(suffix=".sock"), None)
    yield a
    a.staging.close()


def request(app, raw):
    """The Response to the raw HTTP request bytes."""
    req, _ = http.parse_request(bytearray(raw), 1 << 30)
    return dispatch(app, req)
