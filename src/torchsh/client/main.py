"""The `torch` command: a dumb, fast pipe to torchd.

Every shell command pays for every import here, so this module uses builtins only (`_socket`,
`posix`, `sys`) and holds no grammar: it sends argv, cwd, "is stdin a terminal" and the TORCHSH_*
environment to POST /v1/cli and writes back what the daemon says. It is the caller that carries out every
reply the daemon may answer with besides output (protocol.REPLIES: send stdin lines, an environment variable
or files; run a block form's command; follow a job; relay a copy; fetch files; wait for a daemon's exit),
so the shell functions and torch.nu hand it what they cannot do themselves (the handover reply).
No daemon at all: start one, then retry.

The daemon's own lifecycle (starting one when none answers, `daemon stop|restart`, and
`tensors`/`daemon status`, which never start a daemon) lives in daemonctl.py, imported only on
those paths.

The connection (trust checked before anything is sent), the call and the ways out live in wire.py,
which daemonctl.py shares; the HTTP in http.py. A named context (`--context NAME`, TORCHSH_CONTEXT, `torch
context use`: docs/remote.md) is reached through its forwarder's local socket, started by contexts/ when it
does not answer; `torch context …` itself runs here (contexts/cli.py), never in a daemon.
"""
import posix
import sys

from torchsh import paths, protocol
from torchsh.client import wire
from torchsh.client.wire import call, connect_or_none, fail, write


def main(argv=None):
    args = [a.encode(errors="surrogateescape") for a in (sys.argv[1:] if argv is None else argv)]
    sock, name, args = wire.first_flags(args)
    if args[:1] == [b"context"]:  # the context store: client-side only, no daemon (contexts/cli.py)
        from torchsh.client.contexts import cli
        sys.exit(cli.main([a.decode(errors="surrogateescape") for a in args[1:]]))
    path, name = wire.select(sock, name)
    if args[:1] != [b"init"]:  # `init bash|zsh` prints its function all the same: the function's commands say it
        wire.checked_socket(path)
    try:
        tty = posix.isatty(0)
    except OSError:
        tty = True  # no stdin at all: never wait on it
    err_tty = _isatty(2)
    env = [k + b"=" + v for k, v in posix.environ.items() if k.startswith(b"TORCHSH_") and k != b"TORCHSH_CONTEXT"
           and not (name is not None and k == b"TORCHSH_FASTPATH")]  # a context's fast path is its door's, here
    if sock:
        env.append(b"TORCHSH_SOCKET=" + sock.encode())
    if name is not None:  # the daemon prints this context's handles as kind://NAME/… (remote/naming.py)
        env.append(b"TORCHSH_CONTEXT=" + name)
    if b"TORCHSH_COLUMNS" not in posix.environ:  # `torch plot` sizes its chart to the terminal it prints on
        try:
            env.append(b"TORCHSH_COLUMNS=%d" % posix.get_terminal_size(1).columns)
        except OSError:  # stdout is a pipe or a file: the chart keeps its default width
            pass
    request = dict(argv=args, cwd=_cwd(), stdin_is_tty=tty, env_pairs=env, stderr_is_tty=err_tty)
    try:
        _run(path, args, request, name)
    except KeyboardInterrupt:  # Ctrl-C while we wait: one line, never a traceback
        _interrupted(args)


def _run(path, args, request, name=None):
    if name is None and args[:2] in ([b"daemon", b"stop"], [b"daemon", b"restart"]) and not {b"-h", b"--help"} & set(args):
        from torchsh.client import daemonctl  # the rare lifecycle path: its code is paid for only here
        sys.exit(daemonctl.stop(path, request, restart=args[1] == b"restart"))
    # A named context's daemon stops and restarts (in place) by its own verbs: its pid is not ours to wait on.
    conn = _connect_or_start(path, args) if name is None else _connect_context(path, name)
    status, headers, body = call(conn, request)
    for _ in range(MAX_ROUNDS):  # replies asked before anything ran (stdin, env, upload): carry out, resend
        row = protocol.reply_in(headers)
        if row is None or row.name not in _RESEND:
            break
        _RESEND[row.name](path, request, headers[row.header])
        status, headers, body = call(conn, request)
    else:
        fail("bad_request", "the daemon asked for more than %d rounds of files" % MAX_ROUNDS, "see the daemon log")
    if row is not None and row.name in _FINAL:
        try:  # held meanwhile: a block's scope ends when this connection drops (a client killed outright)
            status = _FINAL[row.name](path, request, headers, body, name)
        finally:
            conn.close()
        sys.exit(status)
    conn.close()
    sys.exit(_output(headers, body))


def _output(headers, body):
    out_len = int(headers.get(protocol.H_STDOUT, len(body)))
    body = memoryview(body)  # no copy of a big stdout
    write(1, body[:out_len])
    write(2, body[out_len:])
    return int(headers.get(protocol.H_EXIT, protocol.EXIT_INTERNAL))


def _send_stdin(path, request, count):
    request["stdin_lines"] = _read_stdin_lines(int(count))


def _send_env(path, request, names):
    """The env reply: resend with these variables of ours (empty when unset: asked and answered)."""
    request["env_pairs"] += [n + b"=" + posix.environ.get(n, b"") for n in names.encode().split()]


def _upload(path, request, field):
    from torchsh.client import filerelay  # the rare remote path: its code is paid for only here
    filerelay.upload(path, field, request["env_pairs"], _op(request))


def _download(path, request, headers, body, name):
    """Output, and the files the command wrote for us on a remote context, fetched when it succeeded."""
    if headers.get(protocol.H_EXIT) == "0":
        from torchsh.client import filerelay
        filerelay.download(path, headers[protocol.H_DOWNLOAD], _op(request))
    return _output(headers, body)


def _op(request):
    return request["argv"][0].decode(errors="replace") if request["argv"] else "torch"


def _connect_context(path, name):
    """Context NAME's local socket; when it does not answer, its forwarder is started (ssh or TLS, by the
    context's record) and we connect again. Never starts a local daemon."""
    conn = connect_or_none(path)
    if conn is None:
        from torchsh.client.contexts import store  # the rare path: a forwarder to start
        conn = store.connect_starting_forwarder(name.decode(), path)
    elif posix.environ.get(b"TORCHSH_FASTPATH") == b"1":  # the shell function found no fast door: start it
        from torchsh.client.contexts import store
        store.ensure_fastdoor(name.decode(), path)
    return conn


def _copy(path, request, headers, body, name):
    """A copy directive (`cp H… --to CTX`, `session push --to CTX`): the source daemon named the handles
    (stdout); copyrelay streams them from it to CTX's daemon and prints the new ones (docs/sessions.md)."""
    from torchsh.client import copyrelay  # the rare path: its code is paid for only here
    target, *how = headers[protocol.H_COPY].split(" ")
    out_len = int(headers.get(protocol.H_STDOUT, len(body)))
    mine = b"://%s/" % (name or b"default")  # the daemon wrote our context's handles kind://NAME/ID
    handles = [h.strip().replace(mine, b"://", 1).decode() for h in body[:out_len].split(b"\n") if h.strip()]
    write(2, body[out_len:])
    dst = paths.socket_path() if target == "default" else paths.context_socket(
        wire.checked_name(target.encode()).decode())
    if target != "default" and connect_or_none(dst) is None:
        from torchsh.client.contexts import store
        store.connect_starting_forwarder(target, dst).close()
    return copyrelay.run(path, dst, handles, keep="keep" in how, context=target, op=_op(request), force="force" in how)


def _isatty(fd):
    try:
        return posix.isatty(fd)
    except OSError:
        return False


def _cwd():
    try:
        return posix.getcwdb()
    except OSError:  # the folder was removed under us; relative paths cannot work anyway
        return b"/"


def _connect_or_start(path, args):
    if args[:2] == [b"daemon", b"status"] or args[:1] == [b"tensors"]:
        from torchsh.client import daemonctl
        return daemonctl.connect_without_start(path, args)  # they never start a daemon
    conn = connect_or_none(path)
    if conn is not None:
        return conn
    if len(args) == 2 and args[0] == b"init" and args[1] in (b"bash", b"zsh"):
        _print_shell_function(args[1])  # a .bashrc's eval must not start torchd; the function's first command does
    from torchsh.client import daemonctl  # no daemon yet: the start path's code is paid for only here
    if daemonctl.asks_for_help(args):
        daemonctl.help_without_daemon(args)  # help never starts a daemon
    return daemonctl.start_daemon(path)


def _print_shell_function(shell):
    if shell == b"bash":
        from torchsh.shells.init_bash import script
    else:
        from torchsh.shells.init_zsh import script
    write(1, script().encode())
    sys.exit(0)


def _read_stdin_lines(count):
    """Read exactly `count` non-empty lines (all, if -1) without consuming a byte more.

    Reading byte by byte matters: in `while read h; do torch …; done < file` the rest of the file
    belongs to the loop, not to us.
    """
    if count < 0:
        chunks = []
        while True:
            chunk = posix.read(0, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        return [l.strip() for l in b"".join(chunks).split(b"\n") if l.strip()]
    lines, current = [], []
    while len(lines) < count:
        byte = posix.read(0, 1)
        if not byte or byte == b"\n":
            line = b"".join(current).strip()
            current = []
            if line:
                lines.append(line)
            if not byte:
                break
        else:
            current.append(byte)
    return lines


def _exec(path, request, headers, body, name):
    from torchsh.client import blocks  # a block form's command: its code is paid for only here
    return blocks.run(path, request, headers, body, name)


def _follow(path, request, headers, body, name):
    from torchsh.client import follow  # a job followed: its code is paid for only here
    return follow.run(path, request, headers, body, name)


def _interrupted(args):
    """Ctrl-C: one line, then die of SIGINT as the shell expects ($? is 130, and a script's loop stops)."""
    import _signal
    op = b" ".join(args[:2] if args[:1] in ([b"daemon"], [b"scope"]) else args[:1]).decode(errors="replace")
    sys.stderr.write("torch: %s: interrupted\n" % op if op else "torch: interrupted\n")
    sys.stderr.flush()
    _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
    posix.kill(posix.getpid(), _signal.SIGINT)
    posix._exit(130)  # only if SIGINT was blocked


# The replies this client carries out (protocol.REPLIES; wire.CARRIES lists them in every request): those
# asked before anything ran are carried out and the command sent again; the others end the command. await is
# daemonctl.stop's (`daemon stop|restart`); a named context's daemon, stopping in place, just says so.
MAX_ROUNDS = 64  # one round per file the command names: data open of many files asks file by file
_RESEND = {"stdin": _send_stdin, "env": _send_env, "upload": _upload}
_FINAL = {"exec": _exec, "follow": _follow, "copy": _copy, "download": _download}
