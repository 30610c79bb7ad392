"""The private Unix socket a process of ours listens on: torchd's (daemon/lifecycle.py, daemon/watch.py) and a
TLS context's forwarder's (client/contexts/forwarder.py). One bind for both, with the trust rules of
docs/security.md: its folder must be ours and writable by nobody else (never chmod'ed: a folder we did not
create may be $HOME or /tmp), the socket is 0600 from its first moment, and it appears at its path only once it
listens. A file at the path is replaced only when it is a socket of ours that nobody answers on.
"""
import os
import socket

from torchsh import paths, trust

BACKLOG = 128


class Untrusted(Exception):
    """The socket's folder, or a file in it, is not ours and private: nothing is served there."""


class AlreadyServing(Exception):
    """Another process of ours answers on the socket (or holds its start lock)."""


def refuse_if(problem):
    """Untrusted, with the way out, when trust.untrusted found a PROBLEM."""
    if problem:
        raise Untrusted("%s; %s" % (problem, trust.UNTRUSTED_HINT))


def probe(sock_path):
    """True when something answers on the socket."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(1.0)
    try:
        s.connect(sock_path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def bind_private(sock_path):
    """Check the folder, replace a stale socket file, bind with mode 0600, listen. The socket is bound and
    listening under a name of its own beside the path (paths.sibling: .bind), then renamed onto it: bind makes
    the file before listen, and a client that connected in between (one that saw the file appear) would be
    refused. AlreadyServing when something answers at the path; Untrusted for a folder or file not ours."""
    refuse_if(trust.untrusted(paths.socket_folder(sock_path), trust.S_IFDIR))
    _unlink_stale(sock_path)
    staged = paths.sibling(sock_path, ".bind")
    if paths.socket_path_too_long(staged):  # a path not ending in .sock, near the limit: bound where it is
        staged = sock_path
    else:
        _unlink_stale(staged, probed=False)  # left by one that died between its bind and its rename
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(staged)
    finally:
        os.umask(old)
    os.chmod(staged, 0o600)  # ours: just made
    listener.listen(BACKLOG)
    if staged != sock_path:
        os.rename(staged, sock_path)
    return listener


def _unlink_stale(path, probed=True):
    """Remove a socket file of ours that nobody answers on (probed: AlreadyServing when one does); a file that is
    not our socket (say TORCHSH_SOCKET names a data file) is never unlinked: Untrusted."""
    try:
        problem = trust.untrusted(path, trust.S_IFSOCK)
    except FileNotFoundError:
        return
    refuse_if(problem)
    if probed and probe(path):
        raise AlreadyServing("a daemon already answers on %s" % path)
    os.unlink(path)
