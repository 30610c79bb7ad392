"""The caller's world for one request: cwd, TORCHSH_* environment, stdin, and the daemon's state.

Handlers take a Context instead of reaching for globals, so unit tests can build one by hand.
"""
import os
from dataclasses import dataclass

_TRUE = ("1", "true", "yes", "on")


@dataclass(slots=True)  # built for every request: slots make that cheaper
class Context:
    app: object                 # daemon.app.App: registry, table, locks, lifecycle
    cwd: str = "/"
    env: dict = None            # the caller's TORCHSH_* variables
    stdin_is_tty: bool = True
    stdin: list = None          # stdin lines, once the client has sent them
    peer_pid: int = None        # the client process (SO_PEERCRED on the Unix socket); None on the fast path
    stderr_is_tty: bool = False  # the caller's stderr is a terminal: a job's progress may be a live \r line
    can_follow: bool = False    # the caller follows a job's output to its end (the CLI face's clients do)

    def __post_init__(self):
        self.env = self.env or {}

    @property
    def registry(self):
        return self.app.registry

    @property
    def table(self):
        return self.app.table

    @property
    def scope(self):
        return self.env.get("TORCHSH_SCOPE") or None

    @property
    def no_grad(self):
        return self.env.get("TORCHSH_NO_GRAD", "").lower() in _TRUE

    @property
    def inference_mode(self):
        return self.env.get("TORCHSH_INFERENCE_MODE", "").lower() in _TRUE

    @property
    def device(self):
        """TORCHSH_DEVICE, checked (a CUDA device on a CPU build is a device_error here, not deep in an op)."""
        text = self.env.get("TORCHSH_DEVICE") or None
        if text is not None:
            from torchsh.vocab import device_from_text  # vocab imports torch; Context stays light
            device_from_text(text)
        return text

    @property
    def context_name(self):
        """The context this command runs on, as the caller named it ("default": the local daemon)."""
        return self.env.get("TORCHSH_CONTEXT") or "default"

    def path(self, text):
        """A path word as this daemon opens it. On the local daemon: relative to the caller's cwd. On a named
        context (a remote daemon) a path is the caller's file, which this daemon cannot see: only
        `NAME:/path` (a file on the daemon's own host) is taken; anything else is refused by name, never
        resolved silently on the wrong host."""
        text = os.path.expanduser(str(text))
        name = self.context_name
        if name == "default":
            return os.path.normpath(os.path.join(self.cwd, text))
        host_path = text[len(name) + 1:] if text.startswith(name + ":") else None
        if host_path is not None and host_path.startswith("/"):
            return os.path.normpath(host_path)
        from torchsh.errors import TorchshError
        raise TorchshError("remote_path", "%s is a path on this machine, but context %s's daemon runs elsewhere"
                           % (text, name), "for a file on %s's host write %s:/absolute/path; for a file here, "
                           "load it on the local daemon and copy it: torch --context default cp H --to %s"
                           % (name, name, name))

    def put(self, obj, kind="tensor"):
        return self.app.registry.put(obj, kind, self.scope)
