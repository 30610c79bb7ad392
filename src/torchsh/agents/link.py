"""The MCP server's link to the daemon: it is a client of the daemon like `torch` itself (same socket, same
trust checks, same handles), built on torchsh.client's connection and HTTP.

Every command goes through `Link.cli(argv, stdin)` (POST /v1/cli, one connection per call, run on a worker
thread so the event loop keeps serving) and carries the server's policy header (`torch mcp --read-only
--allow P --deny P`: the daemon refuses what it does not admit, before anything runs). A reply is read piece
by piece: at most `keep` bytes of its stdout stay in memory whatever its size (a 1.2 GB `value` is counted,
not held). `Link.get_json(path)` reads the JSON face (/v1/ops, /v1/tensors).
"""
import json
import os
import re
from dataclasses import dataclass

import anyio

from torchsh import paths, protocol
from torchsh.call.policy import Policy
from torchsh.client import http, wire
from torchsh.errors import TorchshError

H_POLICY, H_ERROR = protocol.H_POLICY, protocol.H_ERROR  # the policy we send; the error row a failure carries
# We carry out one reply: stdin lines (resent from the text the tool was given). For the rest the daemon
# applies the row's fallback (protocol.REPLIES): a job that follows is carried out by the daemon itself.
CARRIES = b"%s: %s\r\n" % (protocol.H_REPLIES.encode(), protocol.replies_header(("stdin",)))
KEEP = 4 << 20            # stdout bytes a reply may keep in memory (the store's cap for one output)
STDERR_KEEP = 64 << 10    # warnings and the error line: a command's stderr is short
JSON_LIMIT = 32 << 20     # the op table is ~1 MB; refuse a JSON reply that would not be one
_ERROR_LINE = re.compile(r"torch: (?:(?P<op>[\w. -]+): )?(?P<message>.*?)(?:; (?P<hint>.*))? \[(?P<code>[a-z_]+)\]$")


def policy_header(policy):
    """The H_POLICY request header line for the server's flags (a call.policy.Policy, which the daemon's
    check reads back), or b"" when it admits everything (the header would say nothing)."""
    if not (policy.read_only or policy.allow or policy.deny):
        return b""
    value = json.dumps({"read_only": policy.read_only, "allow": list(policy.allow), "deny": list(policy.deny)},
                       separators=(",", ":"), ensure_ascii=True)
    return b"%s: %s\r\n" % (H_POLICY.encode(), value.encode())


@dataclass
class Outcome:
    """One command's fate: its exit status, the head of its stdout (stdout_bytes counts all of it), its
    stderr (warnings, the error line), and the error {code, message, hint, op} when it failed."""
    exit: int
    stdout: str
    stdout_bytes: int
    stderr: str
    error: dict = None
    truncated: bool = False  # stdout was longer than what the link keeps (`keep`): stdout is its head


class Link:
    """The daemon at `socket` (default: $TORCHSH_SOCKET, else the user's), spoken to under `policy`."""

    def __init__(self, policy=Policy(), socket=None, keep=KEEP):
        self.policy, self.keep, self.header = policy, keep, policy_header(policy)
        self.socket = paths.socket_path(socket)

    async def cli(self, argv, stdin=None):
        """Run `torch ARGV…` (stdin: its lines, given up front): an Outcome. TorchshError when no daemon."""
        return await anyio.to_thread.run_sync(self.cli_blocking, list(argv), stdin)

    async def get_json(self, path):
        """GET `path` of the JSON face: the decoded body. TorchshError (its error body) when refused."""
        return await anyio.to_thread.run_sync(self.get_json_blocking, path)

    def cli_blocking(self, argv, stdin=None):
        lines = None if stdin is None else [line.encode(errors="surrogateescape")
                                            for line in stdin.split("\n") if line.strip()]
        request = dict(argv=[a.encode(errors="surrogateescape") for a in argv], cwd=_cwd(),
                       stdin_is_tty=stdin is None, env_pairs=_env_pairs(), stdin_lines=lines)
        conn = self.connect()
        try:
            for _ in range(2):  # the stdin reply asks once; its lines are resent with the command
                reply = self._post(conn, request)
                if protocol.H_STDIN not in reply.headers:
                    return self._outcome(reply)
                _drain(reply)
                request["stdin_lines"] = lines or []
            return self._outcome(reply)
        except OSError as e:
            raise TorchshError("daemon_unavailable", "lost the daemon mid-request: %s" % e,
                               "retry; see the daemon log") from None
        finally:
            conn.close()

    def get_json_blocking(self, path):
        conn = self.connect()
        try:
            http.send(conn, b"GET", path.encode(), close=True)
            reply = http.Reply(conn)
            if reply.length > JSON_LIMIT:
                raise TorchshError("too_large", "GET %s answered %d bytes" % (path, reply.length), None)
            body = reply.body()
        except OSError as e:
            raise TorchshError("daemon_unavailable", "lost the daemon mid-request: %s" % e,
                               "retry; see the daemon log") from None
        finally:
            conn.close()
        data = json.loads(body)
        if reply.status >= 400:
            err = data.get("error") or {}
            raise TorchshError(err.get("code") if err.get("code") in protocol.ERRORS else "internal_error",
                               err.get("message") or "GET %s failed" % path, err.get("hint"))
        return data

    def connect(self):
        """A trusted connection to the daemon, one started when none answers (as `torch` does)."""
        problem = paths.socket_path_too_long(self.socket)
        if problem:
            raise TorchshError(paths.SOCKET_PATH_CODE, problem, paths.SOCKET_PATH_HINT)
        try:  # wire and daemonctl end a refused check with sys.exit and one line on stderr (our log)
            conn = wire.connect_or_none(self.socket)
            if conn is None:
                from torchsh.client import daemonctl
                conn = daemonctl.start_daemon(self.socket)
        except SystemExit:
            raise TorchshError("daemon_unavailable", "no trusted daemon answers on %s" % self.socket,
                               "see the line above in this server's stderr, and the daemon log") from None
        return conn

    def _post(self, conn, request):
        http.send(conn, b"POST", protocol.CLI_PATH.encode(), protocol.encode_cli_request(**request),
                  headers=CARRIES + self.header)
        return http.Reply(conn)

    def _outcome(self, reply):
        """Read the reply's body piecewise: the head of stdout kept, the rest counted; stderr kept short."""
        out_len = int(reply.headers.get(protocol.H_STDOUT, reply.length))
        out, err, seen = bytearray(), bytearray(), 0
        for piece in reply.pieces():
            cut = max(0, min(len(piece), out_len - seen))
            out += piece[:max(0, min(cut, self.keep - len(out)))]
            err += piece[cut:cut + max(0, STDERR_KEEP - len(err))]
            seen += len(piece)
        status = int(reply.headers.get(protocol.H_EXIT, protocol.EXIT_INTERNAL))
        stderr = err.decode(errors="replace")
        error = _error(reply.headers.get(H_ERROR), stderr) if status else None
        return Outcome(status, out.decode(errors="replace"), out_len, stderr, error, truncated=out_len > len(out))


def _error(header, stderr):
    """The failure as {code, message, hint, op}: the daemon's H_ERROR header, else its stderr line parsed;
    None when neither says one (`runs diff` exits 1 when runs differ, `data next` at an epoch's end)."""
    if header:
        try:
            return json.loads(header)
        except ValueError:
            pass
    for line in reversed(stderr.strip().splitlines()):
        found = _ERROR_LINE.fullmatch(line.strip())
        if found:
            return found.groupdict()
    return None


def _drain(reply):
    for _ in reply.pieces():
        pass


def _env_pairs():
    """The TORCHSH_* settings of our environment, as the client sends them (the context is the socket's)."""
    env = [k + b"=" + v for k, v in os.environb.items()
           if k.startswith(b"TORCHSH_") and k not in (b"TORCHSH_CONTEXT", b"TORCHSH_FASTPATH")]
    if b"TORCHSH_COLUMNS" not in os.environb:  # `torch plot`'s terminal chart: a width that reads well as text
        env.append(b"TORCHSH_COLUMNS=100")
    return env


def _cwd():
    try:
        return os.getcwdb()
    except OSError:  # our folder was removed: relative paths cannot work anyway
        return b"/"
