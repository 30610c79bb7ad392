"""The socket file under a live daemon: if it is deleted (a `rm -rf` of the runtime folder's files,
a tmp cleaner), clients could no longer reach the daemon, would start a second one that finds the
start lock held and exits, and would wait out their start timeout. The server's loop asks
SocketWatch every tick; a deleted socket is bound again at the same path (the objects stay), and
a path that now holds something else, or cannot be bound, stops the daemon cleanly.
"""
import logging
import os

log = logging.getLogger("torchd")


class SocketWatch:
    def __init__(self, path):
        self.path = path
        self.identity = _identity(path)

    def check(self):
        """None while all is well; a new listener when the socket was bound again; False: stop."""
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return self._rebind()
        except OSError:
            return None  # cannot tell (a permission hiccup): look again next tick
        if (st.st_dev, st.st_ino) != self.identity and self.identity is not None:
            log.warning("%s was replaced by another file; stopping", self.path)
            self.identity = None  # not ours any more: never unlink it at exit
            return False
        return None

    def ours(self):
        """True when the path still holds the socket this daemon bound (safe to unlink at exit)."""
        return self.identity is not None and _identity(self.path) == self.identity

    def _rebind(self):
        from torchsh.privatesocket import bind_private
        try:
            listener = bind_private(self.path)
        except Exception as e:  # the folder went too, or is no longer private: nothing safe to bind
            log.warning("socket %s was deleted and cannot be bound again (%s); stopping", self.path, e)
            return False
        self.identity = _identity(self.path)
        log.warning("socket %s was deleted; bound it again (objects kept)", self.path)
        return listener


def _identity(path):
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino
