"""What an op returns besides plain values, beside the wire contract whose rows they are (protocol.REPLIES):
the result types verbs return (Text, Table, Binary, LateJson, Streams) and the replies besides output, one
type per protocol.REPLIES row (Exec, Follow, Copy, Await; raised before anything ran: NeedStdin, NeedUpload,
NeedEnv, Handover). Each face writes them (cli/run.py + daemon/routes.py, daemon/fastpath.py, api/ops.py);
a result's wire form (objects registered as handles) is call/towire.py's, its JSON bytes text/jsonout.py's.
"""
from dataclasses import dataclass
from typing import NamedTuple

from torchsh import protocol


class Text(str):
    """A verb's output to print verbatim (help, tables, `torch print`)."""


class JsonText(Text):
    """Ready-made JSON text (tensor values with shortest floats): printed as is, embedded as is by the API."""


class Table(list):
    """JSON rows (under --json and through the API) that print as aligned columns on a terminal."""

    def __init__(self, rows, columns):
        super().__init__(rows)
        self.columns = columns

    def text(self):
        if not self:
            return ""
        cells = [[str(r.get(c, "")) for c in self.columns] for r in self]
        widths = [max(len(row[i]) for row in cells) for i in range(len(self.columns) - 1)]
        return "".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + ("  " if widths else "")
                       + row[-1] + "\n" for row in cells)


class Binary(bytes):
    """Raw bytes for stdout (`torch value --format npy`)."""


class LateJson:
    """JSON made after the op returns, outside the tensor lock (`torch value` of a snapshot):
    render() gives the bytes, with non-finite floats as strings or, with nan="bare", bare tokens.
    The render function takes (nan, start, end): bytes joined around the JSON in one go (no copy of big text)."""

    def __init__(self, render):
        self._render = render

    def render(self, nan=None, end=b"", start=b""):
        return self._render(nan, start, end)


class Streams(NamedTuple):
    """A verb's own stdout, stderr and exit status: a job's output once it has ended (jobs/follow.py)."""
    stdout: str
    stderr: str = ""
    exit: int = 0
    error: object = None  # the TorchshError of a job that failed (its stderr's last line): protocol.H_ERROR


# -- Replies besides plain output: one type per protocol.REPLIES row (`reply` names it) --------------------
# Handlers return the ones a command answers with once it ran; the ones found before anything ran are raised
# (Ask). call/replies.py decides, per caller, between the reply, a handover and the row's fallback; each
# face writes a reply's wire form from its fields (cli/run.py + daemon/routes.py, daemon/fastpath.py, api/ops.py).

class Ask(Exception):
    """A reply found before anything ran, raised where it is found (deep in the binder or a path's
    conversion): the face answers it, or hands the command over, or refuses. Not a failure."""
    reply = ""
    op = None


class NeedStdin(Ask):
    """stdin: resend the command with `count` stdin lines (-1: all of it)."""
    reply = "stdin"

    def __init__(self, count):
        super().__init__(count)
        self.count = count

    def field(self):
        return str(self.count)


class NeedUpload(Ask):
    """upload: a command on a remote context names a caller's file the daemon has not been sent yet."""
    reply = "upload"

    def __init__(self, path, may_be_missing=False):
        super().__init__(path)
        self.path = path
        self.may_be_missing = may_be_missing  # a folder the op also writes (fit --log): none there is fine

    def field(self):
        return protocol.staged_pairs([(protocol.STAGED_MAY_BE_MISSING if self.may_be_missing else "", self.path)])


class NeedEnv(Ask):
    """env: resend the command with these variables of the caller's environment (`nu-module --install`: HOME)."""
    reply = "env"

    def __init__(self, names):
        super().__init__(names)
        self.names = tuple(names)

    def field(self):
        return " ".join(self.names)


class Handover(Ask):
    """handover: the caller lacks a reply this command needs (row `needs`): the real `torch` client runs it."""
    reply = "handover"

    def __init__(self, op, needs):
        super().__init__(op, needs)
        self.op, self.needs = op, needs

    def field(self):
        return self.needs

    def line(self):
        return "torch: %s: needs the `torch` client (it carries out the %s reply); nothing ran [needs_client]" % (
            self.op, self.needs)

    def json(self):
        return {"op": self.op, "needs": self.needs, "message": self.line()}


@dataclass(frozen=True)
class Exec:
    """exec: a block form's answer (`scope -- CMD`, `no_grad -- CMD`, `daemon log -f`): the caller runs argv
    in its own world with env added, then runs then_argv (`scope end ID`)."""
    argv: list
    env: dict
    then_argv: tuple = ()
    reply = "exec"

    def field(self):
        return "1"

    def body(self):
        return protocol.encode_exec(self.argv, self.env, list(self.then_argv))


@dataclass(frozen=True)
class Follow:
    """follow: a job's output so far for its follower, and the poll that reads on: `job poll J VIEW --offset N`.
    A foreground run (view "run") is leased to its follower: Ctrl-C stops it, and so does its absence."""
    stdout: str
    stderr: str
    job: object
    view: str
    offset: int
    as_json: bool = False
    reply = "follow"

    @property
    def stops(self):
        return self.view == "run"

    def poll(self):
        """The next poll as command-line words."""
        return ["job", "poll", self.job.handle, self.view, "--offset", str(self.offset)] + (
            ["--json"] if self.as_json else [])

    def field(self):
        return "%d %s" % (self.stops, " ".join(self.poll()))

    def json(self):
        return {"op": "job.poll", "args": [self.job.handle, self.view],
                "kwargs": {"offset": self.offset, "json": self.as_json}, "stops": self.stops}


@dataclass(frozen=True)
class Copy:
    """copy: the client relays these objects from this daemon to context `context`'s (`cp`, `session push`)."""
    handles: tuple
    context: str
    keep: bool = False
    force: bool = False   # names held there by other objects move (else name_in_use)
    reply = "copy"

    def field(self):
        return self.context + (" keep" if self.keep else "") + (" force" if self.force else "")

    def json(self):
        return {"handles": list(self.handles), "to": self.context, "keep": self.keep, "force": self.force}


@dataclass(frozen=True)
class Await:
    """await: this daemon is stopping (`daemon stop`): the caller waits until process `pid` has exited; a
    restart then starts a new one with `settings` ("K=V K=V")."""
    text: str
    pid: int
    settings: str = ""
    reply = "await"

    def field(self):
        return str(self.pid)
