"""The `torch` command: a dumb, fast pipe to torchd.

Every shell command pays for every import here, so this module uses builtins only (`_socket`,
`posix`, `sys`) and holds no grammar: it sends argv, cwd, "is stdin a terminal" and the TORCHSH_*
environment to POST /v1/cli and writes back what the daemon says. Three replies ask for more:
"send N stdin lines" (the daemon found N tensor slots missing), "exec this command" (block forms
such as `torch scope -- CMD`), and no daemon at all (start one, then retry).

The daemon's own lifecycle (starting one when none answers, `daemon stop|restart`, and
`tensors`/`daemon status`, which never start a daemon) lives in daemonctl.py, imported only on
those paths.

The connection (trust checked before anything is sent), the call and the ways out live in wire.py,
which daemonctl.py shares. A named context (`--context NAME`, TORCHSH_CONTEXT, `torch context use`:
docs/remote.md) is reached through its forwarder's local socket, started by remote/ when it does not
answer; `torch context …` itself runs here (remote/cli.py), never in a daemon.
"""
import posix
import sys

from torchsh import protocol, wire
from torchsh.wire import call, connect, connect_or_none, fail, write


def main(argv=None):
    args = [a.encode(errors="surrogateescape") for a in (sys.argv[1:] if argv is None else argv)]
    sock, name, args = wire.first_flags(args)
    if args[:1] == [b"context"]:  # the context store: client-side only, no daemon (remote/cli.py)
        from torchsh.remote import cli
        sys.exit(cli.main([a.decode(errors="surrogateescape") for a in args[1:]]))
    path, name = wire.select(sock, name)
    if args[:1] != [b"init"]:  # `init bash|zsh` prints its function all the same: the function's commands say it
        wire.checked_socket(path)
    try:
        tty = posix.isatty(0)
    except OSError:
        tty = True  # no stdin at all: never wait on it
    err_tty = _isatty(2)
    env = [k + b"=" + v for k, v in posix.environ.items() if k.startswith(b"TORCHSH_") and k != b"TORCHSH_CONTEXT"]
    if args[:1] == [b"nu-module"]:  # --install writes into the caller's Nushell folder, found from these
        env += [k + b"=" + v for k, v in posix.environ.items() if k in (b"HOME", b"XDG_CONFIG_HOME")]
    if sock:
        env.append(b"TORCHSH_SOCKET=" + sock.encode())
    if name is not None:  # the daemon prints this context's handles as kind://NAME/… (remote/naming.py)
        env.append(b"TORCHSH_CONTEXT=" + name)
        env.append(b"TORCHSH_STREAMS_FILES=1")  # and this client streams the files its command names
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
    if name is None and args in ([b"daemon", b"stop"], [b"daemon", b"restart"]):
        from torchsh import daemonctl  # the rare lifecycle path: its code is paid for only here
        sys.exit(daemonctl.stop(path, request, restart=args[1] == b"restart"))
    # A named context's daemon stops and restarts (in place) by its own verbs: its pid is not ours to wait on.
    conn = _connect_or_start(path, args) if name is None else _connect_context(path, name)
    status, headers, body = call(conn, request)
    if protocol.H_STDIN in headers:
        request["stdin_lines"] = _read_stdin_lines(int(headers[protocol.H_STDIN]))
        status, headers, body = call(conn, request)
    if protocol.H_UPLOAD in headers or protocol.H_DOWNLOAD in headers:  # a remote context and the caller's files
        from torchsh import filerelay  # the rare remote path: its code is paid for only here
        headers, body = filerelay.serve(conn, path, request, headers, body)
    if protocol.H_EXEC in headers:
        conn.close()
        sys.exit(_run_exec(path, request, body, name))
    if protocol.H_FOLLOW in headers:
        conn.close()
        sys.exit(_follow(path, request, headers, body))
    if protocol.H_COPY in headers:
        conn.close()
        sys.exit(_copy(path, name, args, headers, body))
    out_len = int(headers.get(protocol.H_STDOUT, len(body)))
    body = memoryview(body)  # no copy of a big stdout
    write(1, body[:out_len])
    write(2, body[out_len:])
    sys.exit(int(headers.get(protocol.H_EXIT, protocol.EXIT_INTERNAL)))


def _connect_context(path, name):
    """Context NAME's local socket; when it does not answer, its forwarder is started (ssh or TLS, by the
    context's record) and we connect again. Never starts a local daemon."""
    conn = connect_or_none(path)
    if conn is None:
        from torchsh.remote import contexts  # the rare path: a forwarder to start
        conn = contexts.connect_starting_forwarder(name.decode(), path)
    return conn


def _copy(path, name, args, headers, body):
    """A copy directive (`cp H… --to CTX`, `session push --to CTX`): the source daemon named the handles
    (stdout); copyrelay streams them from it to CTX's daemon and prints the new ones (docs/sessions.md)."""
    from torchsh import copyrelay  # the rare path: its code is paid for only here
    target, _, keep = headers[protocol.H_COPY].partition(" ")
    out_len = int(headers.get(protocol.H_STDOUT, len(body)))
    mine = b"://%s/" % (name or b"default")  # the daemon wrote our context's handles kind://NAME/ID
    handles = [h.strip().replace(mine, b"://", 1).decode() for h in body[:out_len].split(b"\n") if h.strip()]
    write(2, body[out_len:])
    dst = protocol.socket_path() if target == "default" else protocol.context_socket(
        wire.checked_name(target.encode()).decode())
    if target != "default" and connect_or_none(dst) is None:
        from torchsh.remote import contexts
        contexts.connect_starting_forwarder(target, dst).close()
    return copyrelay.run(path, dst, handles, keep=keep == "keep", context=target, op=args[0].decode())


def _isatty(fd):
    try:
        return posix.isatty(fd)
    except OSError:
        return False


def _follow(path, request, headers, body):
    """Follow a job (`torch fit`, `job wait`, `job logs -f`): write each reply, stderr first (it clears
    a terminal's progress line before a row is printed under it), then send the poll its follow header
    names, until a reply has none: its exit status is ours. Ctrl-C during a foreground run (STOPS "1")
    adds --interrupt to the next poll, which stops the job at its next step boundary; following goes on
    to the job's end (`stopped at …`, status 130). A second Ctrl-C, or one while only watching, leaves."""
    interrupt = None  # None: no Ctrl-C yet; True: the next poll carries --interrupt; False: it was sent
    stops = headers[protocol.H_FOLLOW][:1]
    while True:
        try:
            if body is not None:
                out_len = int(headers.get(protocol.H_STDOUT, len(body)))
                write(2, memoryview(body)[out_len:])
                write(1, memoryview(body)[:out_len])
                body = None
            follow = headers.get(protocol.H_FOLLOW)
            if follow is None:
                if protocol.H_DOWNLOAD in headers:  # a remote context's run wrote the caller's --log folder
                    from torchsh import filerelay
                    filerelay.download(path, headers[protocol.H_DOWNLOAD], request["argv"][0].decode(errors="replace"))
                return int(headers.get(protocol.H_EXIT, protocol.EXIT_INTERNAL))
            stops, _, words = follow.partition(" ")
            argv = words.encode().split(b" ") + ([b"--interrupt"] if interrupt else [])
            try:
                conn = connect(path)
            except OSError:
                fail("daemon_unavailable", "the daemon went away while following a job", "its objects are gone")
            _, reply_headers, body = call(conn, dict(request, argv=argv, stdin_lines=None))
            conn.close()
            headers, interrupt = reply_headers, (False if interrupt else interrupt)
        except KeyboardInterrupt:
            if stops != "1" or interrupt is False:
                raise
            interrupt = True  # the reply being read, if any, is lost: the same poll is sent again


def _cwd():
    try:
        return posix.getcwdb()
    except OSError:  # the folder was removed under us; relative paths cannot work anyway
        return b"/"


def _connect_or_start(path, args):
    if args[:2] == [b"daemon", b"status"] or args[:1] == [b"tensors"]:
        from torchsh import daemonctl
        return daemonctl.connect_without_start(path, args)  # they never start a daemon
    conn = connect_or_none(path)
    if conn is not None:
        return conn
    if len(args) == 2 and args[0] == b"init" and args[1] in (b"bash", b"zsh"):
        _print_shell_function(args[1])  # a .bashrc's eval must not start torchd; the function's first command does
    from torchsh import daemonctl  # no daemon yet: the start path's code is paid for only here
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


def _run_exec(path, request, body, name=None):
    """Run a block form's command (`torch scope -- CMD`), then tell the daemon it ended. CMD's own
    `torch` commands run on the same context as we do (TORCHSH_CONTEXT), however it was chosen."""
    env_add, then_argv, argv = protocol.decode_exec(body)
    env = dict(posix.environ)
    if name is not None:
        env[b"TORCHSH_CONTEXT"] = name
    elif b"TORCHSH_CONTEXT" in env:
        env[b"TORCHSH_CONTEXT"] = b"default"
    for pair in env_add:
        k, _, v = pair.partition(b"=")
        if k.startswith(b"TORCHSH_"):  # a reply sets torchsh's own settings for CMD, never PATH or LD_*
            env[k] = v
    status = _spawn_and_wait(argv, env)
    if then_argv:
        request = dict(request, argv=then_argv, stdin_lines=None)
        try:
            conn = connect(path)
        except OSError:
            fail("daemon_unavailable", "the daemon went away while the command ran", "its objects are gone")
        _, headers, reply = call(conn, request)
        write(2, reply[int(headers.get(protocol.H_STDOUT, 0)):])
    return 128 - status if status < 0 else status


def _spawn_and_wait(argv, env):
    """CMD's exit status (negative: killed by that signal; 127: it could not run).

    A signal meant for us (kill, timeout(1), a closed terminal) is passed on to CMD, and we wait for
    CMD and end the scope as usual, so CMD is not orphaned. Ctrl-C on a terminal already reaches CMD
    (same foreground process group), so SIGINT is passed on only when we are not that group.
    SIGKILL cannot be caught: then the daemon ends the scope once it sees we are gone."""
    import _signal
    child, pending = [], []

    def forward(signum, frame):
        if signum == _signal.SIGINT:
            try:
                if posix.tcgetpgrp(0) == posix.getpgrp():
                    return  # a terminal's Ctrl-C, which CMD got too
            except OSError:
                pass
        if child:
            try:
                posix.kill(child[0], signum)
            except OSError:
                pass
        else:
            pending.append(signum)  # arrived before CMD started: pass it on at once afterwards

    # A SIGHUP or SIGTERM ignored by whoever started us (nohup) stays ignored, for us and for CMD.
    forwarded = [_signal.SIGINT] + [sig for sig in (_signal.SIGTERM, _signal.SIGHUP)
                                    if _signal.getsignal(sig) != _signal.SIG_IGN]
    old = {sig: _signal.signal(sig, forward) for sig in forwarded}
    try:
        pid = posix.posix_spawnp(argv[0], argv, env, setsigdef=(_signal.SIGINT,))
        child.append(pid)
        for signum in pending:
            posix.kill(pid, signum)
        return posix.waitstatus_to_exitcode(posix.waitpid(pid, 0)[1])
    except OSError as e:
        sys.stderr.write("torch: cannot run %s: %s\n" % (argv[0].decode(), e.strerror))
        return 127
    finally:
        for sig, handler in old.items():
            _signal.signal(sig, handler)


def _interrupted(args):
    """Ctrl-C: one line, then die of SIGINT as the shell expects ($? is 130, and a script's loop stops)."""
    import _signal
    op = b" ".join(args[:2] if args[:1] in ([b"daemon"], [b"scope"]) else args[:1]).decode(errors="replace")
    sys.stderr.write("torch: %s: interrupted\n" % op if op else "torch: interrupted\n")
    sys.stderr.flush()
    _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
    posix.kill(posix.getpid(), _signal.SIGINT)
    posix._exit(130)  # only if SIGINT was blocked


if __name__ == "__main__":
    main()
