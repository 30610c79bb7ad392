"""What a request made, so that it can be taken back: the daemon's registry lists, per thread, the handles
put or restored while a worker records one request (daemon/workers.py). When that request's reply cannot
be delivered (its client was killed, or hung up, or stopped reading), nobody ever learns those handles: the
worker frees them, as PostgreSQL rolls back the transaction of a client that disconnected.

The rule (docs/security.md, "Nothing you made is lost silently"): what the request made is freed; what it
merely named or returned (an input, `keep`'s handles) is not; a job is kept (a detached `fit` was asked to
outlive its client, and `torch jobs` lists it); scopes are not handles and stay (an owned one ends with
its owner: registry/store.py's reaper).
"""
import threading

from torchsh.errors import TorchshError
from torchsh.registry.kinds import HANDLE_KINDS
from torchsh.registry.store import Registry

_KEPT = frozenset(k.name for k in HANDLE_KINDS.values() if k.outlives_client)  # as the kinds' rows say: job


class RecordingRegistry(Registry):
    def __init__(self, epoch=None):
        super().__init__(epoch)
        self._made = threading.local()  # .handles: the list this thread's request is filling, or None

    def put(self, obj, kind="tensor", scope=None):
        handle = super().put(obj, kind, scope)
        made = getattr(self._made, "handles", None)
        if made is not None and kind not in _KEPT:
            made.append(handle)
        return handle

    def restore(self, objects, scopes=()):
        super().restore(objects, scopes)  # `session load`, `cp` with --keep: all or none
        made = getattr(self._made, "handles", None)
        if made is not None:
            made.extend(h for h, (_, kind, _) in objects.items() if kind not in _KEPT)

    def recording(self):
        """`with registry.recording() as made:` the handles this thread makes meanwhile are listed in `made`
        (a request answered inside another's, at a job's step boundary, has a list of its own)."""
        return _Recording(self._made)

    def free_unclaimed(self, made):
        """Free those of `made` still held (the client that would have learned them is gone); -> the freed."""
        freed = []
        for handle in made:
            try:
                self.free([handle])
            except TorchshError:  # freed meanwhile (a scope's end, another client's `free`): nothing to do
                continue
            freed.append(handle)
        return freed


class _Recording:
    """RecordingRegistry.recording's context: a class, not a generator (every request enters one)."""
    __slots__ = ("local", "outer")

    def __init__(self, local):
        self.local, self.outer = local, None

    def __enter__(self):
        self.outer = getattr(self.local, "handles", None)
        self.local.handles = made = []
        return made

    def __exit__(self, kind, value, tb):
        self.local.handles = self.outer
