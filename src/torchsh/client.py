"""The `torch` command: a dumb, fast pipe to torchd.

Every shell command pays for every import here, so this module uses builtins only (`_socket`,
`posix`, `sys`) and holds no grammar: it sends argv, cwd, "is stdin a terminal" and the TORCHSH_*
environment to POST /v1/cli and writes back what the daemon says. Three replies ask for more:
"send N stdin lines" (the daemon found N tensor slots missing), "exec this command" (block forms
such as `torch scope -- CMD`), and no daemon at all (start one, then retry).
"""
import _socket
import posix
import sys

from torchsh import protocol

START_TIMEOUT_S = 120.0   # import torch takes ~1.5 s, but a loaded CI machine can be much slower
_NO_START = (b"daemon", b"stop"), (b"daemon", b"status")


def main(argv=None):
    args = [a.encode(errors="surrogateescape") for a in (sys.argv[1:] if argv is None else argv)]
    sock = None
    if len(args) >= 2 and args[0] == b"--socket":
        sock, args = args[1].decode(), args[2:]
    path = protocol.socket_path(sock)
    try:
        tty = posix.isatty(0)
    except OSError:
        tty = True  # no stdin at all: never wait on it
    env = [k + b"=" + v for k, v in posix.environ.items() if k.startswith(b"TORCHSH_")]
    if sock:
        env.append(b"TORCHSH_SOCKET=" + sock.encode())
    request = dict(argv=args, cwd=_cwd(), stdin_is_tty=tty, env_pairs=env)
    conn = _connect_or_start(path, args)
    status, headers, body = _call(conn, request)
    if protocol.H_STDIN in headers:
        request["stdin_lines"] = _read_stdin_lines(int(headers[protocol.H_STDIN]))
        status, headers, body = _call(conn, request)
    if protocol.H_EXEC in headers:
        conn.close()
        sys.exit(_run_exec(path, request, body))
    out_len = int(headers.get(protocol.H_STDOUT, len(body)))
    _write(1, body[:out_len])
    _write(2, body[out_len:])
    sys.exit(int(headers.get(protocol.H_EXIT, protocol.EXIT_INTERNAL)))


def _cwd():
    try:
        return posix.getcwdb()
    except OSError:  # the folder was removed under us; relative paths cannot work anyway
        return b"/"


def _connect(path):
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.connect(path)
    except OSError:
        s.close()
        raise
    return s


def _connect_or_start(path, args):
    try:
        return _connect(path)
    except OSError:
        pass
    if tuple(args[:2]) in _NO_START:
        _fail("daemon_unavailable", "no daemon is running on %s" % path,
              "`torch daemon start` starts one; any other command starts one too")
    if len(args) == 2 and args[0] == b"init" and args[1] in (b"bash", b"zsh"):
        _print_shell_function(args[1])  # a .bashrc's eval must not start torchd; the function's first command does
    return _start_daemon(path)


def _print_shell_function(shell):
    if shell == b"bash":
        from torchsh.shells.init_bash import script
    else:
        from torchsh.shells.init_zsh import script
    _write(1, script().encode())
    sys.exit(0)


def _start_daemon(path):
    """Start torchd detached, logging beside the socket, and wait until it answers.

    Two commands racing here both spawn; torchd's start lock lets exactly one of them serve and
    the other exits 0, so both clients simply wait for the socket.
    """
    log = protocol.sibling(path, ".log")
    folder = path.rsplit("/", 1)[0] or "/"
    try:
        _makedirs(folder)
        log_fd = posix.open(log, posix.O_WRONLY | posix.O_CREAT | posix.O_APPEND, 0o600)
    except OSError as e:
        _fail("daemon_unavailable", "cannot create %s: %s" % (log, e.strerror), "check permissions")
    pid = posix.fork()
    if pid == 0:  # child: detach from the terminal and the caller's process group
        try:
            posix.setsid()
            null = posix.open("/dev/null", posix.O_RDONLY)
            posix.dup2(null, 0)
            posix.dup2(log_fd, 1)
            posix.dup2(log_fd, 2)
            posix.execv(sys.executable, [sys.executable, "-m", "torchsh.daemon", "--socket", path])
        finally:
            posix._exit(127)
    posix.close(log_fd)
    return _wait_for_daemon(path, pid, log)


def _wait_for_daemon(path, pid, log):
    import time  # builtin module, only paid on the rare start path
    deadline = time.monotonic() + START_TIMEOUT_S
    child_alive = True
    while time.monotonic() < deadline:
        try:
            return _connect(path)
        except OSError:
            pass
        if child_alive:
            done, status = posix.waitpid(pid, posix.WNOHANG)
            if done:
                child_alive = False
                if posix.waitstatus_to_exitcode(status) != 0:
                    _fail("daemon_unavailable", "torchd failed to start", "see its log: %s" % log)
        time.sleep(0.02)
    _fail("daemon_unavailable", "torchd did not answer within %ds" % START_TIMEOUT_S, "see its log: %s" % log)


def _makedirs(folder):
    parts = folder.split("/")
    for i in range(2, len(parts) + 1):
        try:
            posix.mkdir("/".join(parts[:i]) or "/", 0o700)
        except FileExistsError:
            pass


def _call(conn, request):
    body = protocol.encode_cli_request(**request)
    head = b"POST %s HTTP/1.1\r\nHost: torchd\r\nContent-Length: %d\r\n\r\n" % (
        protocol.CLI_PATH.encode(), len(body))
    try:
        conn.sendall(head + body)
        return _read_response(conn)
    except OSError as e:
        _fail("daemon_unavailable", "lost the daemon mid-request: %s" % e, "retry; see the daemon log")


def _read_response(conn):
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed")
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        headers[k.strip().lower().decode()] = v.strip().decode()
    need = int(headers.get("content-length", 0))
    parts = [rest]
    have = len(rest)
    while have < need:
        chunk = conn.recv(max(65536, need - have))
        if not chunk:
            raise ConnectionError("connection closed")
        parts.append(chunk)
        have += len(chunk)
    return status, headers, b"".join(parts)


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


def _run_exec(path, request, body):
    """Run a block form's command (`torch scope -- CMD`), then tell the daemon it ended."""
    import _signal
    env_add, then_argv, argv = protocol.decode_exec(body)
    env = dict(posix.environ)
    for pair in env_add:
        k, _, v = pair.partition(b"=")
        env[k] = v
    old = _signal.signal(_signal.SIGINT, _signal.SIG_IGN)  # Ctrl-C goes to CMD; we still clean up
    try:
        pid = posix.posix_spawnp(argv[0], argv, env, setsigdef=(_signal.SIGINT,))
        status = posix.waitstatus_to_exitcode(posix.waitpid(pid, 0)[1])
    except OSError as e:
        sys.stderr.write("torch: cannot run %s: %s\n" % (argv[0].decode(), e.strerror))
        status = 127
    finally:
        _signal.signal(_signal.SIGINT, old)
    if then_argv:
        request = dict(request, argv=then_argv, stdin_lines=None)
        try:
            conn = _connect(path)
        except OSError:
            _fail("daemon_unavailable", "the daemon went away while the command ran", "its objects are gone")
        _, headers, reply = _call(conn, request)
        _write(2, reply[int(headers.get(protocol.H_STDOUT, 0)):])
    return 128 - status if status < 0 else status


def _write(fd, data):
    try:
        while data:
            data = data[posix.write(fd, data):]
    except BrokenPipeError:
        pass  # `torch value $t | head -1`: the reader left; that is not our failure


def _fail(code, message, hint):
    sys.stderr.write("torch: %s; %s [%s]\n" % (message, hint, code))
    sys.exit(protocol.exit_status(code))


if __name__ == "__main__":
    main()
