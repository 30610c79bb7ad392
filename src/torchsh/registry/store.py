"""The registry: put/get objects by handle, atomic free, memory scopes, census rows.

Thread-safe by its own small lock, so `torch tensors` and `daemon status` can read it while the
tensor lock is held by a long op. Lookups are kind-checked: a module handle in a tensor slot is a
`wrong_kind` error, a handle of an earlier daemon is `stale_handle`, a freed one `unknown_handle`.

A scope opened by `torch scope -- CMD` belongs to the client that waits for CMD and then ends it: it ends
when that client's connection drops (the exec reply's connection is held for the block's life) or, when
known, once its process is gone (registry/owners.py), so its objects do not leak. A command still running
in an ended scope is refused (scope_ended), naming why it ended, instead of making objects nobody frees.
"""
import itertools
import threading
import time
from dataclasses import dataclass, field

from torchsh.errors import TorchshError
from torchsh.registry import owners
from torchsh.registry.handles import base36, format_handle, new_epoch, parse_handle
from torchsh.registry.kinds import HANDLE_KINDS, KINDS
from torchsh.registry.names import Names
from torchsh.registry.naming import Naming

ENDED_KEPT = 4096  # ended scopes remembered, so a command still running in one is told why (scope_ended)


@dataclass(slots=True)  # one per object the daemon holds, made by every op
class Entry:
    kind: str
    obj: object
    created: float
    scope: str = None  # the scope that frees it, None for the global registry


@dataclass
class Scope:
    id: str
    parent: str = None
    handles: set = field(default_factory=set)
    owner: tuple = None   # (pid, start time) of the client process that will end it, if any


class Registry(Naming):
    def __init__(self, epoch=None):
        self.epoch = epoch or new_epoch()
        self._entries = {}
        self._scopes = {}
        self._serial = itertools.count(1)
        self._lock = threading.Lock()
        self._reaper = None
        self._ended = {}  # ended scope id -> why, the newest ENDED_KEPT
        self.names = Names()  # `@enc` -> handle (registry/names.py)
        self._handles = {}  # id(object) -> the handle last put for it, while held (handle_of)

    # -- objects ---------------------------------------------------------------------------
    def put(self, obj, kind="tensor", scope=None):
        assert kind in KINDS, kind
        with self._lock:
            handle = format_handle(kind, self.epoch, next(self._serial))
            if scope is not None and scope not in self._scopes:
                scope = None  # the scope already ended: the object outlives it in the global registry
            self._entries[handle] = Entry(kind, obj, time.time(), scope)
            if scope is not None:
                self._scopes[scope].handles.add(handle)
            self._remember(obj, handle)
            return handle

    def _remember(self, obj, handle):
        self._handles[id(obj)] = handle

    def _forget(self, handle, entry):
        if self._handles.get(id(entry.obj)) == handle:
            del self._handles[id(entry.obj)]

    def handle_of(self, obj):
        """The handle that holds this very object now, else None (the history log names arguments by it)."""
        handle = self._handles.get(id(obj))
        entry = self._entries.get(handle) if handle is not None else None
        return handle if entry is not None and entry.obj is obj else None

    def restore(self, objects, scopes=()):
        """Hold objects {handle: (obj, kind, scope)} under the handles they had in an earlier daemon (a session
        load): all or none. This registry accepts their epoch for exactly these handles, and its counter moves
        past their serials, so a handle it makes later never equals one of them (whatever the epochs)."""
        with self._lock:
            taken = [h for h in objects if h in self._entries]
            if taken:
                raise TorchshError("bad_argument", "%s is held already (%d of the session's handles are)"
                                   % (taken[0], len(taken)), "load a session into a fresh daemon")
            for sid, parent, owner in scopes:
                if sid not in self._scopes:
                    self._scopes[sid] = Scope(sid, parent, owner=tuple(owner) if owner else None)
            last = 0
            for handle, (obj, kind, scope) in objects.items():
                scope = scope if scope in self._scopes else None
                self._entries[handle] = Entry(kind, obj, time.time(), scope)
                if scope is not None:
                    self._scopes[scope].handles.add(handle)
                self._remember(obj, handle)
                last = max(last, int(parse_handle(handle)[2], 36))
            for sid, _, _ in scopes:
                last = max(last, int(sid[len("scope-") + len(self.epoch):] or "0", 36))
            self._serial = itertools.count(max(last + 1, next(self._serial)))
            if any(s.owner for s in self._scopes.values()) and self._reaper is None:
                self._start_reaper()

    def scope_records(self):
        """[(id, parent, owner)] of the open scopes, parents first (what a session save writes)."""
        with self._lock:
            return [(s.id, s.parent, list(s.owner) if s.owner else None) for s in self._scopes.values()]

    def get(self, handle, kind=None):
        entry = self._entries.get(handle)  # first the common case: a held handle, exactly, of that kind
        return entry.obj if entry is not None and kind in (None, entry.kind) else self.entry(handle, kind).obj

    def kind_of(self, handle):
        """The kind of the object `handle` (or a `@name`) names exactly (no stripping, no epoch check), or None."""
        if handle[:1] == "@":
            handle = self.names.lookup(handle)
        return getattr(self._entries.get(handle), "kind", None)

    def holds(self, handle):
        """True when the handle names an object held here (of this daemon's epoch, or restored)."""
        return handle.strip() in self._entries

    def entry(self, handle, kind=None):
        handle = self.resolve(handle)
        entry = self._entries.get(handle)
        if entry is None:
            raise self._missing(handle, kind)
        if kind is not None and entry.kind not in _as_tuple(kind):
            want = " or ".join(HANDLE_KINDS[k].article for k in _as_tuple(kind))
            raise TorchshError("wrong_kind", "%s is %s, but %s is needed here" % (handle, HANDLE_KINDS[entry.kind].article, want))
        return entry

    def _missing(self, handle, kind):
        parsed = parse_handle(handle)
        if parsed is None or parsed[0] not in KINDS:
            return TorchshError("bad_handle", "%r is not a handle" % handle[:60],
                                "handles look like tensor://%s00001" % self.epoch)
        if parsed[1] != self.epoch:
            return TorchshError("stale_handle", "%s belongs to a daemon that has exited" % handle,
                                "objects do not survive a daemon restart; save them with `torch save` first")
        return TorchshError("unknown_handle", "no object %s (freed, or never made)" % handle,
                            "`torch tensors` lists what is held")

    def free(self, handles):
        """Free all of them or none: every handle is validated before anything is dropped."""
        handles = [self.resolve(h) for h in handles]
        with self._lock:
            for h in handles:
                if h not in self._entries:
                    raise self._missing(h, None)
            for h in handles:
                self._drop(h)
            self.names.forget(handles)  # `torch free @enc` frees the object and drops the name

    def free_all(self):
        with self._lock:
            count = len(self._entries)
            self._entries.clear()
            self.names.clear()
            self._handles.clear()
            for scope in self._scopes.values():
                scope.handles.clear()
            return count

    def _drop(self, handle):
        entry = self._entries.pop(handle, None)
        if entry is not None:
            self._forget(handle, entry)
        if entry is not None and entry.scope in self._scopes:
            self._scopes[entry.scope].handles.discard(handle)

    def items(self):
        with self._lock:
            return list(self._entries.items())

    def counts(self):
        out = {k: 0 for k in KINDS}
        for _, entry in self.items():
            out[entry.kind] += 1
        return out

    # -- scopes ------------------------------------------------------------------------------
    def begin_scope(self, parent=None, owner_pid=None):
        """Open a scope; with owner_pid, the scope also ends when that process is gone (see reap_orphans)."""
        owner = (owners.process_identity(owner_pid) or (owner_pid, -1)) if owner_pid else None  # gone: reap
        with self._lock:
            if parent is not None and parent not in self._scopes:
                parent = None
            scope_id = "scope-%s%s" % (self.epoch, base36(next(self._serial)))
            self._scopes[scope_id] = Scope(scope_id, parent, owner=owner)
            if owner is not None and self._reaper is None:
                self._start_reaper()
            return scope_id

    def _start_reaper(self):
        self._reaper = owners.Reaper(self)

    def reap_orphans(self):
        """End every scope whose owning client process is gone; return {scope id: objects freed}."""
        with self._lock:
            owned = [(s.id, s.owner) for s in self._scopes.values() if s.owner is not None]
        return owners.reap(self, owned)

    # obj -> True while a running job uses it (the jobs layer sets this: jobs/job.py). A scope that ends
    # meanwhile moves such an object to its parent scope instead of freeing it: the job keeps training it,
    # and freeing the handle would lose what it trains, silently.
    in_use = staticmethod(lambda obj: False)

    def check_scope(self, scope_id):
        """A command runs in scope `scope_id` (TORCHSH_SCOPE): scope_ended when it is one of ours that is not
        open. Another daemon's (a block whose command also talks to another context) is not ours to judge:
        what the command makes here stays, as it always has (put() holds it globally)."""
        if scope_id not in self._scopes:
            why = self._ended.get(scope_id)
            if why is None and not scope_id.startswith("scope-" + self.epoch):
                return
            raise TorchshError("scope_ended", "scope %s %s" % (scope_id, "ended: %s" % why if why else
                               "is not open here (it ended)"),
                               "nothing ran; the block's command outlived its scope: stop it, or unset TORCHSH_SCOPE to work outside one")

    def end_scope(self, scope_id, why="`torch scope end` ran"):
        """Free every handle made in the scope and in scopes still open inside it (but what a running job
        uses, which moves to the parent scope); return the count freed."""
        with self._lock:
            if scope_id not in self._scopes:
                raise TorchshError("bad_argument", "no open scope %s (ended already, or from another daemon)" % scope_id,
                                   "`torch scope begin` opens one")
            doomed = [scope_id]
            for s in list(self._scopes.values()):
                if s.parent in doomed:
                    doomed.append(s.id)  # children listed after parents, so one pass suffices
            parent = self._scopes[scope_id].parent
            freed, pinned = 0, self.names.pinned()
            for sid in doomed:
                scope = self._scopes.pop(sid)
                self._ended[sid] = why if sid == scope_id else "its outer scope %s ended" % scope_id
                while len(self._ended) > ENDED_KEPT:
                    del self._ended[next(iter(self._ended))]
                for h in scope.handles:
                    entry = self._entries.get(h)
                    if entry is None:
                        continue
                    if self.in_use(entry.obj) or h in pinned:  # a job trains it, or a name holds it: moves out
                        entry.scope = parent
                        if parent is not None:
                            self._scopes[parent].handles.add(h)
                        continue
                    del self._entries[h]
                    self._forget(h, entry)
                    freed += 1
            return freed

    def keep(self, handles, scope_id):
        """Let handles outlive the caller's scope `scope_id`: move them to its parent (or the global registry).

        Only handles owned by that scope or by scopes nested inside it move; a handle that already
        lives further out (an enclosing scope, another shell's scope, the global registry) stays put,
        so a `keep` can never shorten a handle's life or reach into a sibling scope.
        """
        with self._lock:
            for h in handles:
                if h not in self._entries:
                    raise self._missing(h, None)
            caller = self._scopes.get(scope_id)
            origin = caller.id if caller else None   # an ended or unknown scope: the caller is global
            target = caller.parent if caller else None
            for h in handles:
                entry = self._entries[h]
                if entry.scope is None or not self._within(entry.scope, origin):
                    continue
                self._scopes[entry.scope].handles.discard(h)
                entry.scope = target
                if target is not None:
                    self._scopes[target].handles.add(h)

    def _within(self, scope_id, ancestor):
        """Is scope_id `ancestor` or nested inside it? Every scope is inside the global registry (None)."""
        while scope_id is not None:
            if scope_id == ancestor:
                return True
            scope = self._scopes.get(scope_id)
            scope_id = scope.parent if scope else None
        return ancestor is None

    def open_scopes(self):
        with self._lock:
            return {s.id: len(s.handles) for s in self._scopes.values()}


def _as_tuple(kind):
    return kind if isinstance(kind, tuple) else (kind,)
