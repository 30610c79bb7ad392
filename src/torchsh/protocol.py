"""The wire contract that the client and the daemon both import.

Builtins only: the `torch` client imports this module on every shell command, so it may use
`posix` and `sys` and nothing else. What lives here: the shape of a `/v1/cli` request and reply; the
replies besides output a command may get (REPLIES); the fast path's framing; and the one table from error
code to HTTP status to exit code. Where the socket, log and lock live is paths.py; what is trusted, trust.py.
"""
API_PREFIX = "/v1"
CLI_PATH = "/v1/cli"
CLI_FORMAT = b"torchsh-cli-1"  # first field of a /v1/cli body; bump when the framing changes

# Reply headers of POST /v1/cli. The body is stdout bytes followed by stderr bytes.
H_EXIT = "torchsh-exit"        # the exit status the client must return
H_STDOUT = "torchsh-stdout"    # how many body bytes are stdout; the rest is stderr
# On a failed command: the error its one stderr line is made from, as compact ASCII JSON
# {"code", "message", "hint", "op"}, for callers that want it as data (torch mcp); others ignore it.
H_ERROR = "torchsh-error"
# The request header of a caller that runs commands for someone it trusts less (torch mcp --read_only,
# --allow P, --deny P): JSON {"read_only": bool, "allow": [pattern…], "deny": [pattern…]} (call/policy.py).
H_POLICY = "torchsh-policy"
# The request header in which a caller lists the replies below that it carries out (space-separated names).
H_REPLIES = "torchsh-replies"
# The reply headers of the REPLIES rows below (each row says what its header holds)
H_STDIN, H_EXEC, H_FOLLOW, H_COPY = "torchsh-stdin", "torchsh-exec", "torchsh-follow", "torchsh-copy"
H_UPLOAD, H_DOWNLOAD, H_PID, H_ENV = "torchsh-upload", "torchsh-download", "torchsh-pid", "torchsh-env"
H_HANDOVER = "torchsh-handover"
H_SETTINGS = "torchsh-settings"  # with H_PID: "K=V K=V" of TORCHSH_TTL, _MAX_MEMORY, _FASTPATH… for a restart


class Reply:
    """One reply the daemon may answer a command with, besides plain output: a row of REPLIES."""
    __slots__ = ("name", "header", "letter", "fields", "fallback", "meaning")

    def __init__(self, name, header, letter, fields, fallback, meaning):
        self.name, self.header, self.letter, self.fields = name, header, letter, fields
        self.fallback, self.meaning = fallback, meaning


# How long a stopping daemon lets the requests it took, and its jobs, finish before it exits anyway.
STOP_GRACE_S = 10.0
STOP_GRACE_ENV = "TORCHSH_STOP_GRACE"


def stop_grace_s(value):
    """$TORCHSH_STOP_GRACE in seconds (str or bytes; raise it where single ops run long), else STOP_GRACE_S.
    torchd reads it when it starts and `torch daemon stop` waits that long plus a margin."""
    try:
        return max(0.0, float(value)) if value else STOP_GRACE_S
    except ValueError:
        return STOP_GRACE_S


# What a caller that carries out neither the reply nor `handover` gets (docs/architecture.md):
DAEMON = "daemon"    # the daemon carries it out itself and answers once, at the end
SKIP = "skip"        # the output alone, without the reply
REFUSE = "refuse"    # nothing runs: one error line, code needs_client
# A caller that lacks a reply the command needs, but carries `handover`, is handed the command over before
# anything runs: "run it with the real `torch` client". A new reply can never break an older or smaller caller.
REPLIES = (
    Reply("stdin", H_STDIN, "i", "N", REFUSE,
          "resend the command with N stdin lines (-1: all of stdin), one handle a line; nothing ran yet"),
    Reply("exec", H_EXEC, "x", "body: encode_exec(argv, env, then_argv)", REFUSE,
          "run argv in the caller's world with env added, then send then_argv; exit with argv's status. "
          "Hold this reply's connection open meanwhile: when it drops first, the scope the block opened ends"),
    Reply("follow", H_FOLLOW, "f", "STOPS WORD…; body: this poll's stdout and stderr", DAEMON,
          "write this reply (stderr first), send the poll WORD…, repeat until a reply has none: its exit status "
          "is the command's. STOPS 1: the job is leased to its follower: Ctrl-C adds --interrupt to the next "
          "poll, and a follower gone for a few seconds stops it at its next step boundary"),
    Reply("copy", H_COPY, "", "CTX [keep] [force]; stdout: the source handles", REFUSE,
          "relay these objects from this daemon to context CTX's (the client alone reaches both)"),
    Reply("upload", H_UPLOAD, "", "[?]ID:hex(path),…", REFUSE,
          "send the caller's files a remote context's daemon needs, then resend the command; nothing ran yet"),
    Reply("download", H_DOWNLOAD, "", "[+]ID:hex(path),…; with the output", REFUSE,
          "fetch the files the command wrote for the caller from a remote context's daemon"),
    Reply("await", H_PID, "", "PID; H_SETTINGS: K=V…; with the output", SKIP,
          "the daemon is stopping: wait until process PID has exited (restart: then start one with SETTINGS)"),
    Reply("env", H_ENV, "", "NAME…", REFUSE,
          "resend the command with these variables of the caller's environment added; nothing ran yet"),
    Reply("handover", H_HANDOVER, "h", "OP; stderr: why, for a caller that prints it", REFUSE,
          "run this command with the real `torch` client instead (command torch \"$@\"); nothing ran"),
)
REPLY_ROWS = {r.name: r for r in REPLIES}
CLIENT_REPLIES = tuple(r.name for r in REPLIES if r.name != "handover")  # the torch client: all, it hands over to none


def staged_pairs(pairs):
    """(stage id, path) pairs as one upload or download field: id:hex(path), comma-separated (a path may hold
    any byte but NUL; a header may not). filerelay.pairs reads it back."""
    return ",".join("%s:%s" % (stage_id, (path.encode(errors="surrogateescape") if isinstance(path, str) else path).hex())
                    for stage_id, path in pairs)


def replies_header(names):
    """The value of H_REPLIES for these names, in REPLIES order."""
    return " ".join(r.name for r in REPLIES if r.name in names).encode()


def reply_in(headers):
    """The REPLIES row whose header a reply carries (header names lower-case), or None: plain output."""
    for row in REPLIES:
        if row.header in headers:
            return row
    return None


def carried(value):
    """The reply names an H_REPLIES value lists (unknown names ignored: a newer caller, an older daemon)."""
    return frozenset(w for w in (value or "").replace(",", " ").split() if w in REPLY_ROWS)


# Exit statuses by class. The README's table, docs/errors.md and `torch --help` are generated from
# these, EXIT_CLASSES and ERRORS.
EXIT_OK = 0
EXIT_INTERNAL = 1     # a bug in torchsh: please report
EXIT_END = 1          # nothing left: `data next` at the end of an epoch (silent, so `while b=$(…)` ends)
EXIT_USAGE = 2        # bad command line: unknown op or flag, wrong arity, unparsable value
EXIT_HANDLE = 3       # unknown, stale or wrong-kind handle; a run already in fit's --log DIR (a profile in --out DIR)
EXIT_TORCH = 4        # PyTorch refused the computation (shapes, dtypes, values)
EXIT_DAEMON = 5       # the daemon could not be reached or started
EXIT_IO = 6           # a file could not be read or written

# code -> (HTTP status, exit status, one-line meaning). Stable: codes never change once shipped.
ERRORS = {
    "usage": (400, EXIT_USAGE, "the command line does not match the op's usage"),
    "bad_argument": (400, EXIT_USAGE, "an argument could not be read as the kind the op needs"),
    "unknown_op": (404, EXIT_USAGE, "no op or verb has that name"),
    "unknown_flag": (400, EXIT_USAGE, "the op takes no flag of that name"),
    "missing_argument": (400, EXIT_USAGE, "a required argument was not given"),
    "ambiguous_op": (400, EXIT_USAGE, "a bare name matches ops in several namespaces"),
    "unknown_handle": (404, EXIT_HANDLE, "no object has that handle (freed, or never made)"),
    "stale_handle": (410, EXIT_HANDLE, "the handle belongs to a daemon that has exited"),
    "wrong_kind": (409, EXIT_HANDLE, "the handle names an object of another kind"),
    "bad_handle": (400, EXIT_HANDLE, "the text is not a well-formed handle"),
    "unknown_name": (404, EXIT_HANDLE, "no object has that @name (freed, expired, or never named)"),
    "name_in_use": (409, EXIT_HANDLE, "the @name names another object; `torch name --force` moves it"),
    "shape_mismatch": (422, EXIT_TORCH, "tensor shapes do not fit together"),
    "dtype_error": (422, EXIT_TORCH, "a tensor has a dtype the op cannot use"),
    "torch_error": (422, EXIT_TORCH, "PyTorch raised an error"),
    "autograd_error": (422, EXIT_TORCH, "the autograd rules forbid this"),
    "device_error": (422, EXIT_TORCH, "the device is unknown or unavailable"),
    "file_error": (422, EXIT_IO, "a file could not be read or written"),
    "state_mismatch": (422, EXIT_TORCH, "saved state does not fit the model, optimizer or scheduler"),
    "bad_request": (400, EXIT_USAGE, "the HTTP request is malformed"),
    "not_found": (404, EXIT_USAGE, "no such endpoint"),
    "out_of_memory": (507, EXIT_TORCH, "the result would not fit in the daemon's memory budget; nothing was allocated"),
    "too_large": (413, EXIT_USAGE, "a request, header or argument is over its size limit"),
    "request_timeout": (408, EXIT_DAEMON, "the request did not arrive in time; the connection was closed"),
    "daemon_unavailable": (503, EXIT_DAEMON, "the daemon could not be reached or started"),
    "overloaded": (503, EXIT_DAEMON, "the daemon is at its connection or thread limit; retry shortly"),
    "untrusted": (403, EXIT_DAEMON, "the socket, its folder or a file beside it is not yours and private; nothing was sent"),
    "forbidden": (403, EXIT_DAEMON, "the daemon serves only its own user"),
    "in_use": (409, EXIT_HANDLE, "a running job uses the object; stop the job first"),
    "busy": (409, EXIT_DAEMON, "a one-per-daemon facility is taken (torch.profiler: another `torch profile` is recording); retry when it ends"),
    "scope_ended": (410, EXIT_HANDLE, "TORCHSH_SCOPE names a scope of this daemon's that has ended; nothing ran"),
    "end_of_epoch": (416, EXIT_END, "`data next`: the loader's epoch is over (silent); the next call starts the next"),
    "not_supported": (501, EXIT_USAGE, "this daemon cannot run the command as asked (a tool it needs is missing, or an option does not go with another); the hint says what to install or change"),
    "missing_extra": (501, EXIT_USAGE, "the command needs an optional dependency that is not installed; the hint names the extra"),
    "internal_error": (500, EXIT_INTERNAL, "a bug in torchsh; the daemon log has the traceback"),
    "remote_unavailable": (503, EXIT_DAEMON, "a context's remote host cannot be reached over ssh, or has no torchsh"),
    "remote_path": (422, EXIT_USAGE, "a path on the caller's machine given to a remote context's daemon; NAME:/path names its host's files"),
    "not_portable": (422, EXIT_USAGE, "the object cannot be saved or copied (no recipe: a TorchScript module, a running job)"),
    "wrong_context": (409, EXIT_HANDLE, "the handle belongs to another context's daemon; `torch cp H --to CTX` copies it"),
    "unknown_context": (404, EXIT_USAGE, "no context has that name (`torch context ls` lists them)"),
    "fingerprint_mismatch": (403, EXIT_DAEMON, "the TLS daemon's certificate is not the one the context pins; nothing was sent"),
    "token_refused": (403, EXIT_DAEMON, "the TLS daemon refused the context's token"),
    "rank_failed": (422, EXIT_TORCH, "a rank of a distributed fit failed, timed out or could not start; the message names it"),
    "untrusted_network": (400, EXIT_USAGE, "a listener beyond loopback without TLS and a token; torch.distributed's needs --trusted_network"),
    "needs_client": (409, EXIT_USAGE, "the command needs a reply this caller does not carry out (the `torch` client does); nothing ran"),
    "run_exists": (409, EXIT_HANDLE, "DIR holds a run (`fit --log DIR`: --resume auto continues it) or a profile (`profile --out DIR`); --overwrite replaces it"),
    "no_runs": (404, EXIT_IO, "`torch runs`: the folder holds no `fit --log` run (no run.json or metrics.jsonl at or under it)"),
    "unknown_model": (404, EXIT_USAGE, "`torch serve`: no model is served under that name (`torch job list` shows the serve jobs)"),
    "queue_full": (429, EXIT_DAEMON, "`torch serve`: the model's request queue is full (--max_queue); retry after Retry-After seconds"),
    "not_serving": (503, EXIT_DAEMON, "`torch serve`: the served model is stopping; its queued requests are refused"),
    "unknown_metric": (400, EXIT_USAGE, "`torch runs best --by KEY`: no run's epoch rows have that key; the hint names those they have"),
    "not_allowed": (403, EXIT_USAGE, "the caller's policy (torch mcp --read_only, --allow, --deny) does not admit the command; nothing ran"),
}

# exit status -> (its name in `torch --help`, its class in the README's table). Generated into both,
# with the codes of each class from ERRORS (errors.exit_status_line, errors.exit_table_markdown).
EXIT_CLASSES = {
    EXIT_OK: ("ok", "success"),
    EXIT_INTERNAL: ("internal error or end", "internal error (a bug; the daemon log has the traceback), or "
                                             "nothing left (`data next` at the end of an epoch, silent)"),
    EXIT_USAGE: ("usage", "usage: unknown op or flag, wrong arity, unreadable value, over a size limit, "
                          "malformed request, optional extra not installed"),
    EXIT_HANDLE: ("handle", "handle: unknown, stale (earlier daemon), wrong kind, malformed; a run already in "
                            "`fit --log DIR`"),
    EXIT_TORCH: ("PyTorch refused", "PyTorch refused: shapes, dtypes, autograd rules, saved state, memory budget"),
    EXIT_DAEMON: ("daemon unavailable", "daemon unavailable, overloaded, or not provably yours"),
    EXIT_IO: ("file", "file could not be read or written"),
}


# Codes the CLI reports by exit status alone, with nothing on stderr: `while b=$(torch data next $L)` ends
# quietly at the end of an epoch, as `read` does at the end of input.
SILENT = ("end_of_epoch",)


def exit_status(code):
    return ERRORS.get(code, ERRORS["internal_error"])[1]


def http_status(code):
    return ERRORS.get(code, ERRORS["internal_error"])[0]


MAX_BODY = 4 << 30  # a request body on the daemon's Unix socket (bulk .npy uploads, staged files)
# The caller's files on a remote context (remote/staging.py, client/filerelay.py): in H_DOWNLOAD, +ID is a staged
# folder (GET it for its files); in H_UPLOAD, ?ID marks a folder the op also writes (missing: send an empty one)
STAGED_FOLDER, STAGED_MAY_BE_MISSING = "+", "?"


def encode_cli_request(argv, cwd, stdin_is_tty, env_pairs, stdin_lines=None, stderr_is_tty=False):
    """Body of POST /v1/cli: NUL-separated fields (argv cannot hold NUL on Unix).

    [format, cwd, tty, env ("K=V" lines), has_stdin, stdin (lines joined by \\n), *argv]
    tty: "1"/"0" for stdin, then optionally "1"/"0" for stderr (a live progress line needs a terminal).
    """
    tty = (b"1" if stdin_is_tty else b"0") + (b"1" if stderr_is_tty else b"0")
    fields = [CLI_FORMAT, cwd, tty, b"\n".join(env_pairs),
              b"0" if stdin_lines is None else b"1", b"\n".join(stdin_lines or ())]
    fields.extend(argv)
    return b"\0".join(fields)


def decode_cli_request(body):
    fields = body.split(b"\0")
    if len(fields) < 6 or fields[0] != CLI_FORMAT:
        raise ValueError("not a %s body" % CLI_FORMAT.decode())
    env = {}
    for pair in fields[3].split(b"\n"):
        if b"=" in pair:
            k, v = pair.split(b"=", 1)
            env[k.decode()] = v.decode(errors="surrogateescape")
    stdin = None
    if fields[4] == b"1":
        stdin = fields[5].decode(errors="surrogateescape").split("\n") if fields[5] else []
    return {
        "cwd": fields[1].decode(errors="surrogateescape"),
        "stdin_is_tty": fields[2][:1] == b"1",
        "stderr_is_tty": fields[2][1:2] == b"1",
        "env": env,
        "stdin": stdin,
        "argv": [f.decode(errors="surrogateescape") for f in fields[6:]],
    }


def encode_exec(argv, env, then_argv):
    """An exec directive: run argv with env added, then send then_argv, exit with argv's status.

    [n_env, *("K=V"), n_then, *then_argv, *argv], NUL-separated.
    """
    fields = [str(len(env)).encode()]
    fields += [("%s=%s" % kv).encode() for kv in env.items()]
    fields += [str(len(then_argv)).encode()] + [a.encode() for a in then_argv]
    fields += [a.encode(errors="surrogateescape") for a in argv]
    return b"\0".join(fields)


def decode_exec(body):
    fields = body.split(b"\0")
    n_env = int(fields[0])
    env = fields[1:1 + n_env]
    n_then = int(fields[1 + n_env])
    start = 2 + n_env
    return env, fields[start:start + n_then], fields[start + n_then:]


# The fast path's reply head (daemon/fastpath.py writes it; the shell functions in shells/ cut fields
# out of it by offset): fixed width, so bash reads it with one `read -N FAST_HEAD_LEN`.
# Fields: body length, server token, kind (o output, b binary output, s streamed output, i send stdin, x exec,
# f follow, h handover), two numbers.
FAST_HEAD = "HTTP/1.1 200 OK\r\nContent-Length: %10d\r\nTorchsh-Fast: %s %s %11d %11d\r\n\r\n"
FAST_TOKEN_LEN = 32
FAST_LENGTH_AT = FAST_HEAD.index("%10d")
FAST_TOKEN_AT = FAST_LENGTH_AT + 10 + len("\r\nTorchsh-Fast: ")
FAST_KIND_AT = FAST_TOKEN_AT + FAST_TOKEN_LEN + 1
FAST_NUM1_AT = FAST_KIND_AT + 2
FAST_NUM2_AT = FAST_NUM1_AT + 12
FAST_HEAD_LEN = FAST_NUM2_AT + 11 + 4
# The shell function sends its request head with `Expect: 100-continue` and sends the body (argv,
# cwd, environment) only after this interim reply proves the server knows the server token. The daemon's
# loop sends it at once; a port that sends nothing for FAST_CONTINUE_S seconds is not our daemon's (a
# program took it after torchd died), and the function runs the real client, which says what became of it.
FAST_CONTINUE = "HTTP/1.1 100 Continue\r\nTorchsh-Fast: %s\r\n\r\n"
FAST_CONTINUE_S = 3
FAST_CONTINUE_TOKEN_AT = FAST_CONTINUE.index("%s")
FAST_CONTINUE_LEN = len(FAST_CONTINUE) - 2 + FAST_TOKEN_LEN
# A caller whose request head carries this header copies a big stdout straight from the connection (the
# bash functions: `head -c`; bash's read and printf cost ~25 ns a byte, 4 s for 16M floats as JSON): a plain
# output reply whose stdout is FAST_STREAM_BYTES or more is then kind s (num1 the exit status, num2 stdout's
# length), its body stderr, stdout, then the server token once more (proof that stdout came whole).
FAST_STREAM_HEADER = "torchsh-fast-stream"
FAST_STREAM_BYTES = 64 << 10
