"""Accept loop and worker pool. Connections are served concurrently, requests on one connection
in order (HTTP/1.1 keep-alive); tensor work serializes on App.tensor_lock inside the handlers.

A pool of reused threads, not a thread per connection: starting a thread costs more than a whole
small op. A bad request closes its connection with a 400 and never reaches the accept loop.
"""
import logging
import socket
import struct
import threading
from concurrent.futures import ThreadPoolExecutor

from torchsh.daemon import http
from torchsh.daemon.routes import dispatch

log = logging.getLogger("torchd")
MAX_BODY = 4 << 30          # 4 GiB: bulk .npy uploads
IDLE_CONNECTION_S = 600.0   # a kept-alive connection with no request for this long is closed
WORKERS = 64


class Server:
    def __init__(self, app, listener):
        self.app = app
        self.listener = listener
        self.pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="torchd-conn")
        self._conns = set()
        self._conns_lock = threading.Lock()

    def serve(self):
        """Accept until stop is requested or the idle TTL runs out."""
        self.listener.settimeout(0.5)
        while not self.app.stop_event.is_set():
            if self.app.expired():
                log.info("idle for %.0fs (ttl): exiting", self.app.idle_seconds())
                break
            try:
                conn, _ = self.listener.accept()
            except socket.timeout:
                continue
            except OSError:
                if self.app.stop_event.is_set():
                    break
                raise
            _idle_timeout(conn, IDLE_CONNECTION_S)
            self.pool.submit(self._serve_connection, conn)
        self.listener.close()

    def _serve_connection(self, conn):
        with self._conns_lock:
            self._conns.add(conn)
        buf = bytearray()
        try:
            while True:
                parsed = http.parse_request(buf, MAX_BODY)
                if parsed is None:
                    # A small request fits in 64 KiB; asking for 1 MiB up front costs an mmap per recv.
                    chunk = conn.recv(1 << 20 if len(buf) >= 1 << 16 else 1 << 16)
                    if not chunk:
                        return
                    buf += chunk
                    continue
                request, used = parsed
                del buf[:used]
                self.app.touch()
                response = dispatch(self.app, request)
                conn.sendall(response.to_bytes(request.keep_alive))
                if not request.keep_alive:
                    return
        except http.HTTPError as e:
            body = ('{"error":{"code":"bad_request","message":"%s"}}' % str(e).replace('"', "'")).encode()
            _send_quietly(conn, http.Response(400, body).to_bytes(keep_alive=False))
        except (OSError, socket.timeout):
            pass  # the peer went away or idled out; nothing to tell it
        finally:
            with self._conns_lock:
                self._conns.discard(conn)
            conn.close()

    def close(self):
        with self._conns_lock:
            for c in list(self._conns):
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self.pool.shutdown(wait=False, cancel_futures=True)


def _idle_timeout(conn, seconds):
    """Drop a connection idle this long, timed by the kernel (SO_RCVTIMEO/SO_SNDTIMEO): the socket stays
    blocking, so a kept-alive request costs no extra poll() per recv as with Python's settimeout."""
    timeval = struct.pack("ll", int(seconds), 0)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval)


def _send_quietly(conn, data):
    try:
        conn.sendall(data)
    except OSError:
        pass
