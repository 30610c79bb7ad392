"""The wire contract that the client and the daemon both import.

Builtins only: the `torch` client imports this module on every shell command, so it may use
`posix` and `sys` and nothing else. What lives here: where the socket, log and lock live; the
shape of a `/v1/cli` request and reply; and the one table from error code to HTTP status to exit code.
"""
import posix
import sys

API_PREFIX = "/v1"
CLI_PATH = "/v1/cli"
CLI_FORMAT = b"torchsh-cli-1"  # first field of a /v1/cli body; bump when the framing changes

# Reply headers of POST /v1/cli. The body is stdout bytes followed by stderr bytes.
H_EXIT = "torchsh-exit"        # the exit status the client must return
H_STDOUT = "torchsh-stdout"    # how many body bytes are stdout; the rest is stderr
H_STDIN = "torchsh-stdin"      # N: resend with N stdin lines; -1: with all of stdin
H_EXEC = "torchsh-exec"        # present: body is an exec directive (see encode_exec)
H_PID = "torchsh-pid"          # `daemon stop`: the stopping daemon's pid, which the client waits on
H_SETTINGS = "torchsh-settings"  # `daemon stop`: "K=V K=V" of TORCHSH_TTL, _MAX_MEMORY, _FASTPATH for a restart
# A follow directive (a job's output, docs/jobs.md): write this reply, then send the argv in this header
# ("STOPS WORD WORD…", words without spaces) and do the same with its reply, until one has no such
# header: exit with its status. STOPS "1": Ctrl-C meanwhile adds --interrupt to the next poll (the job
# stops at its next step boundary) and following goes on; "0": Ctrl-C just leaves. Write stderr first.
H_FOLLOW = "torchsh-follow"
# `cp H… --to CTX` and `session push --to CTX`: "CTX" or "CTX keep"; stdout holds the source handles, one a
# line. The client relays them (copyrelay.run): export here, import into CTX's daemon, print the new handles.
H_COPY = "torchsh-copy"
# A remote context's daemon and the client move the caller's files (remote/staging.py, filerelay.py):
# "send me these files" before the op runs, and "fetch these files it wrote" after; id:hex(path),…
H_UPLOAD = "torchsh-upload"
H_DOWNLOAD = "torchsh-download"

# Exit statuses by class. The README's table, docs/errors.md and `torch --help` are generated from
# these, EXIT_CLASSES and ERRORS.
EXIT_OK = 0
EXIT_INTERNAL = 1     # a bug in torchsh: please report
EXIT_END = 1          # nothing left: `data next` at the end of an epoch (silent, so `while b=$(…)` ends)
EXIT_USAGE = 2        # bad command line: unknown op or flag, wrong arity, unparsable value
EXIT_HANDLE = 3       # unknown, stale or wrong-kind handle
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
    "end_of_epoch": (416, EXIT_END, "`data next`: the loader's epoch is over (silent); the next call starts the next"),
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
}

# exit status -> (its name in `torch --help`, its class in the README's table). Generated into both,
# with the codes of each class from ERRORS (errors.exit_status_line, errors.exit_table_markdown).
EXIT_CLASSES = {
    EXIT_OK: ("ok", "success"),
    EXIT_INTERNAL: ("internal error or end", "internal error (a bug; the daemon log has the traceback), or "
                                             "nothing left (`data next` at the end of an epoch, silent)"),
    EXIT_USAGE: ("usage", "usage: unknown op or flag, wrong arity, unreadable value, over a size limit, "
                          "malformed request, optional extra not installed"),
    EXIT_HANDLE: ("handle", "handle: unknown, stale (earlier daemon), wrong kind, malformed"),
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


def runtime_dir():
    """The private folder for socket, log and lock: $XDG_RUNTIME_DIR/torchsh, else ${TMPDIR:-/tmp}/torchsh-UID.

    The fallback name is predictable, so another user can take it first: the client and the daemon
    use it only after `untrusted()` finds it ours and private, and refuse loudly otherwise (as tmux does).
    """
    env = posix.environ
    xdg = env.get(b"XDG_RUNTIME_DIR")
    if xdg:
        return xdg.decode() + "/torchsh"
    tmp = (env.get(b"TMPDIR") or b"/tmp").decode().rstrip("/")
    return "%s/torchsh-%d" % (tmp, posix.getuid())


# What the client trusts (docs/security.md): a file or folder is ours when lstat (symlinks are never
# followed) finds the kind we expect, owned by our effective uid (the owner of what we create, and
# what SO_PEERCRED reports), and, for a folder, not writable by group or others (else anyone could
# plant a socket, token file or log symlink in it). Raw st_mode bits: the `stat` module is not a builtin.
MAX_BODY = 4 << 30  # a request body on the daemon's Unix socket (bulk .npy uploads, staged files)
# The caller's files on a remote context (remote/staging.py, filerelay.py): in H_DOWNLOAD, +ID is a staged
# folder (GET it for its files); in H_UPLOAD, ?ID marks a folder the op also writes (missing: send an empty one)
STAGED_FOLDER, STAGED_MAY_BE_MISSING = "+", "?"
S_IFMT, S_IFDIR, S_IFREG, S_IFSOCK, S_IFLNK = 0o170000, 0o040000, 0o100000, 0o140000, 0o120000
KIND_NAMES = {S_IFDIR: "a folder", S_IFREG: "a regular file", S_IFSOCK: "a socket", S_IFLNK: "a symlink"}
UNTRUSTED_HINT = ("remove it if it is yours, or set XDG_RUNTIME_DIR or TORCHSH_SOCKET to a folder "
                  "of your own with mode 0700")


def untrusted(path, kind, st=None):
    """Why `path` must not be trusted, or None when it is ours. kind: S_IFDIR, S_IFREG or S_IFSOCK.

    Raises FileNotFoundError (an OSError) when there is nothing at `path`: absent is not untrusted.
    `st` is an fstat result for a file already opened with O_NOFOLLOW.
    """
    st = st or posix.lstat(path)
    found = st.st_mode & S_IFMT
    if found != kind:
        return "%s is %s, not %s" % (path, KIND_NAMES.get(found, "something else"), KIND_NAMES[kind])
    me = posix.geteuid()
    if st.st_uid != me:
        return "%s belongs to uid %d, not to you (uid %d)" % (path, st.st_uid, me)
    if kind == S_IFDIR and st.st_mode & 0o022:
        return "%s has mode %04o: other users can put files in it" % (path, st.st_mode & 0o7777)
    if kind == S_IFREG and st.st_mode & 0o022:
        return "%s has mode %04o: other users can write it" % (path, st.st_mode & 0o7777)
    if kind == S_IFREG and st.st_nlink > 1:  # a hard link to another of your files (say ~/.bashrc)
        return "%s has %d hard links: it is another file too" % (path, st.st_nlink)
    return None


def socket_folder(sock):
    """The folder that holds the socket (and its log, lock and token file)."""
    return sock.rsplit("/", 1)[0] or "/" if "/" in sock else "."


def socket_path(explicit=None):
    if explicit:
        return explicit
    env = posix.environ.get(b"TORCHSH_SOCKET")
    if env:
        return env.decode()
    return runtime_dir() + "/torchd.sock"


# struct sockaddr_un's sun_path: 108 bytes on Linux, 104 on macOS and the BSDs, the path's closing NUL
# included. bind() and connect() refuse a longer path, so it is checked where a path is first used (the
# client, torchd, torch.nu), before a daemon starts or a file beside the socket is made.
SUN_PATH_LINUX, SUN_PATH_BSD = 108, 104
SUN_PATH = SUN_PATH_LINUX if sys.platform.startswith("linux") else SUN_PATH_BSD
SOCKET_PATH_CODE = "too_large"
SOCKET_PATH_HINT = "set TORCHSH_SOCKET (or --socket) to a shorter path, or XDG_RUNTIME_DIR to a shorter folder"


def socket_path_too_long(path):
    """Why no Unix socket can live at `path` (it does not fit sun_path), or None when it fits."""
    size = len(path.encode(errors="surrogateescape"))
    if size < SUN_PATH:
        return None
    return "socket path %s is %d bytes; a Unix socket path holds at most %d (sun_path: %d bytes with its NUL)" % (
        path, size, SUN_PATH - 1, SUN_PATH)


def context_socket(name):
    """The local socket through which context NAME's daemon is reached: its forwarder (ssh or TLS) listens
    there, so the client, the fast bash path and Nushell speak to a remote daemon as to a local one."""
    return runtime_dir() + "/contexts/" + name + ".sock"


def sibling(sock, suffix):
    """The log/lock/token file that belongs to a socket: torchd.sock -> torchd.log."""
    base = sock[:-5] if sock.endswith(".sock") else sock
    return base + suffix


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
# Fields: body length, server token, kind (o output, b binary output, i send stdin, x exec), two numbers.
FAST_HEAD = "HTTP/1.1 200 OK\r\nContent-Length: %10d\r\nTorchsh-Fast: %s %s %11d %11d\r\n\r\n"
FAST_TOKEN_LEN = 32
FAST_LENGTH_AT = FAST_HEAD.index("%10d")
FAST_TOKEN_AT = FAST_LENGTH_AT + 10 + len("\r\nTorchsh-Fast: ")
FAST_KIND_AT = FAST_TOKEN_AT + FAST_TOKEN_LEN + 1
FAST_NUM1_AT = FAST_KIND_AT + 2
FAST_NUM2_AT = FAST_NUM1_AT + 12
FAST_HEAD_LEN = FAST_NUM2_AT + 11 + 4
# The shell function sends its request head with `Expect: 100-continue` and sends the body (argv,
# cwd, environment) only after this interim reply proves the server knows the server token.
FAST_CONTINUE = "HTTP/1.1 100 Continue\r\nTorchsh-Fast: %s\r\n\r\n"
FAST_CONTINUE_TOKEN_AT = FAST_CONTINUE.index("%s")
FAST_CONTINUE_LEN = len(FAST_CONTINUE) - 2 + FAST_TOKEN_LEN


if __name__ == "__main__":  # pragma: no cover - a debugging aid: print the paths in use
    s = socket_path()
    sys.stdout.write("socket %s\nlog %s\n" % (s, sibling(s, ".log")))
