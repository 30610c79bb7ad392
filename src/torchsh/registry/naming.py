"""The registry's side of names (registry/names.py holds the table): resolving `@enc` to the handle it names,
naming a held object, and expiring names whose TTL ran out, freeing their objects. A mixin of Registry
(store.py), kept apart so each file stays one concept: it uses the registry's lock, entries and drop.
"""


class Naming:
    def resolve(self, text):
        """The handle as given, or the one a `@name` names now (unknown_name when none: expired, freed, never)."""
        text = text.strip()
        if text[:1] != "@":
            return text
        self.expire_names()
        return self.names.resolve(text)

    def name(self, handle, name, force=False, ttl=None):
        """Name a held object (registry/names.py: name_in_use, force, the reflog, a TTL)."""
        handle = self.resolve(handle)
        self.entry(handle)
        self.expire_names()
        self.names.set(name, handle, force, ttl)
        if ttl and self._reaper is None:
            self._start_reaper()  # it expires the names once a second (registry/owners.py)

    def expire_names(self):
        """Drop the names whose TTL ran out, and free their objects (unless pinned otherwise, or a job's)."""
        gone = self.names.expired()
        pinned = self.names.pinned() if gone else ()
        with self._lock:
            for h in [h for h in gone if h in self._entries and h not in pinned]:
                if not self.in_use(self._entries[h].obj):
                    self._drop(h)
