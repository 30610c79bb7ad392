"""The exec reply, carried out by the client (protocol.REPLIES): a block form's command (`torch scope -- CMD`,
`no_grad -- CMD`, `profile -- CMD`, `daemon log -f`) run in the caller's world with the reply's TORCHSH_*
settings, signals passed on to it, then the closing command sent (`scope end ID`, `profile finish ID`), its
output printed after CMD's. Builtins only, like the client; imported only when a command answers with it."""
import posix
import sys

from torchsh import protocol
from torchsh.client.wire import call, connect, fail, write


def run(path, request, headers, body, name=None):
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
        n = int(headers.get(protocol.H_STDOUT, 0))
        write(1, reply[:n])  # what the closing command prints (`profile finish`: its table) comes after CMD's
        write(2, reply[n:])
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
