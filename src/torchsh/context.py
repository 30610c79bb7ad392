"""The caller's world for one request: cwd, TORCHSH_* environment, stdin, and the daemon's state.

Handlers take a Context instead of reaching for globals, so unit tests can build one by hand.
"""
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

    def put(self, obj, kind="tensor"):
        return self.app.registry.put(obj, kind, self.scope)
