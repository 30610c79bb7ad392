"""The server core's doors. Every listening socket of torchd is a Door registered with the one loop of
daemon/server.py: the Unix socket, the loopback fast path (daemon/fastpath.py), each `torch serve --port`
(serve/tcp.py) and `torchd --listen tls://…` (remote/listener.py). A door adds its policy, not a server: who
passes it (SO_PEERCRED; a token in each request's head; or a token in the connection's first line, once), the
routes it lets through, its limits and deadlines, its error body's shape, and TLS.

Slots go only to callers who showed the token. A connection that has not (yet) shown it holds no slot: it
waits, costing a descriptor and a buffer, at most `waiting_limit` of them (`per_peer` from one address), each
for `head_s` from its accept, its TLS handshake included. A new connection past either cap pushes out the
oldest waiting one (of its own address, when that address is at its cap), which is answered 503 with
Retry-After: someone who holds many idle or dripping connections without the token cannot keep the token's
holder out (issue 35), and one address cannot push out another's. Past `slots`, a connection that shows the
token is answered 503 with Retry-After too. Every refusal is drained before it closes (conn.Drain): a reply,
never a reset. A door whose token comes in a first line (`--listen`'s "torchsh-tls-1 TOKEN") answers nothing
before that line is accepted: a connection pushed out or timed out meanwhile just closes.
"""
import collections
import hmac
import threading
from dataclasses import dataclass, field

RETRY_AFTER_S = 1  # what a 503 `overloaded` asks the client to wait
PREAMBLE_MAX = 512  # a door's first line: longer is judged as it is (and refused)
REQUEST_S = 30.0   # a whole request, from its first byte, unless a door says otherwise
IDLE_S = 600.0     # before or between requests, unless a door says otherwise


@dataclass(eq=False)
class Door:
    """One listening socket and its policy (a row); the loop alone changes its counts."""
    kind: str                # "unix", "fast", "serve", "remote"
    name: str                # for the log, the status and refusals: "unix socket", "fast path 127.0.0.1:PORT", …
    listener: object         # the listening socket
    slots: int               # connections past the door's check at once
    max_body: int            # a request body's bytes; more is 413
    request_s: float         # a whole request, from its first byte (a body in big pieces earns more)
    idle_s: float            # before a kept-alive connection's next request
    refusal: object          # (code, message, hint, json_body) -> the reply's bytes, in the door's error shape
    gate: object = None      # request head -> None (no valid token) or what to send before its body; None: no token
    preamble: object = None  # the connection's first line (to its "\n", at most PREAMBLE_MAX bytes) -> (accepted,
                             # the answer to send); checked once, before any HTTP; None: no first line
    refused: bytes = b""     # the answer to a head without a valid token (then closed)
    screen: object = None    # Request -> the refusal's bytes for a route this door does not let through, or None
    frame: object = None     # (Response, Request) -> [bytes]: a reply framed for this door's callers (the fast path's)
    peer_check: object = None  # socket -> (pid, uid) or the refusal's bytes: the Unix socket's SO_PEERCRED
    tls: object = None       # ssl.SSLContext: TLS, its handshake done by the loop within head_s
    waiting_limit: int = 0   # connections that have not shown the token yet
    per_peer: int = 0        # of those, from one address (0: no cap but waiting_limit)
    head_s: float = 0.0      # from accept to a head with a valid token
    keep_alive: bool = True  # False: one request a connection
    quickack: bool = False   # TCP_QUICKACK before each read (bash writes a request line by line)
    open: int = 0            # connections that hold a slot
    waiting: dict = field(default_factory=dict)  # conn -> None, oldest first: connections without the token yet
    by_peer: collections.Counter = field(default_factory=collections.Counter)
    closed: bool = False

    def beside(self, kind, name, listener, slots, **policy):
        """A door that serves as this one does (its body and time limits, its refusals' shape), with its own
        listener, slots and policy (TLS, a first line, a waiting room): `torchd --listen`'s beside the Unix socket."""
        return Door(kind, name, listener, slots, self.max_body, self.request_s, self.idle_s, self.refusal, **policy)

    def passes_at_accept(self):
        """True for a door with no token to show (the Unix socket: its peer check): a slot at accept."""
        return self.gate is None and self.preamble is None

    def refusal_to(self, conn, code, message, hint=None, json_body=False):
        """The refusal's bytes for conn: none while a door's first line is awaited (no HTTP is spoken before
        it: the connection just closes), else in this door's error shape."""
        if self.preamble is not None and not conn.authorized:
            return b""
        return self.refusal(code, message, hint, json_body)

    def wait(self, conn):
        """A new connection waits for its token. -> the connection it pushes out (the oldest of its address
        when that address is at per_peer, else the oldest of all past waiting_limit), or None."""
        victim = None
        if self.per_peer and self.by_peer[conn.peer] >= self.per_peer:
            victim = next(c for c in self.waiting if c.peer == conn.peer)
        elif self.waiting and len(self.waiting) >= self.waiting_limit:
            victim = next(iter(self.waiting))
        self.waiting[conn] = None
        self.by_peer[conn.peer] += 1
        return victim

    def take_slot(self, conn):
        """conn showed the token: True when it now holds a slot, False when all are taken."""
        if not conn.authorized:
            if self.open >= self.slots:
                return False
            self._leave_waiting(conn)
            conn.authorized = True
            self.open += 1
        return True

    def admit(self, conn):
        """A connection that passed at accept (the Unix socket's peer check): True when it holds a slot."""
        if self.open >= self.slots:
            return False
        conn.authorized = True
        self.open += 1
        return True

    def release(self, conn):
        """conn is gone: its slot, or its place among the waiting, is free."""
        if conn.authorized:
            self.open -= 1
        else:
            self._leave_waiting(conn)

    def lets_through(self, buf, request):
        """A request a worker read on its own (a kept-alive connection's next one): True when it carries the
        token and is a route of this door. Else the loop reads it again, and refuses it in this door's words."""
        if self.gate is not None:
            end = buf.find(b"\r\n\r\n")
            if end < 0 or self.gate(bytes(buf[:end])) != b"":
                return False
        return self.screen is None or self.screen(request) is None

    def stats(self):
        return {"door": self.name, "kind": self.kind, "connections": self.open, "slots": self.slots,
                "waiting": len(self.waiting), "waiting_limit": self.waiting_limit, "per_peer": self.per_peer}

    def _leave_waiting(self, conn):
        if self.waiting.pop(conn, False) is None:
            self.by_peer[conn.peer] -= 1
            if not self.by_peer[conn.peer]:
                del self.by_peer[conn.peer]


class Doors:
    """Doors opened and closed from other threads (a serve job's --port, the fast path turned on), applied by
    the loop when wake() wakes it. Each call returns once the loop has done it (a stopped job's port refuses
    at once; an opened door shows in the status); before the loop runs (torchd's start turning the fast path
    on), at once, the loop doing it first thing; after it has ended, at once, a closed listener closed here."""

    def __init__(self, wake):
        self.wake, self.lock, self.changes, self.state = wake, threading.Lock(), [], "before"

    def open(self, door, timeout=10.0):
        self._change("open", door, timeout)

    def close(self, door, timeout=10.0):
        if not self._change("close", door, timeout):
            door.listener.close()  # no loop to do it

    def _change(self, what, door, timeout):
        done = threading.Event()
        with self.lock:
            state = self.state
            if state != "ended":
                self.changes.append((what, door, done))
        if state != "ended":
            self.wake()
        if state == "running":
            done.wait(timeout)
        return done.is_set() or state == "before"

    def take(self):
        """The loop: [("open" or "close", door, Event to set once done)] since the last call."""
        with self.lock:
            out, self.changes = self.changes, []
        return out

    def running(self, running):
        """The loop starts (True) or has ended (False: what it left undone is done here, or dropped)."""
        with self.lock:
            self.state = "running" if running else "ended"
            left = [] if running else self.changes
            if not running:
                self.changes = []
        for what, door, done in left:
            if what == "close":
                door.listener.close()
            done.set()


def header_is(head, name, value):
    """True when the request head (bytes, without its blank line) has the header `name` (lower case, with its
    colon) whose value is `value`, compared in constant time."""
    for line in head.split(b"\r\n")[1:]:
        if line[:len(name)].lower() == name:
            return hmac.compare_digest(line[len(name):].strip(b" \t"), value)
    return False


def expects_continue(head):
    return b"\r\nexpect: 100-continue" in head.lower()
