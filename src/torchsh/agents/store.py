"""What the MCP server keeps for the agent to read later, as resources: outputs too big for a tool result
(torchsh://out/N, text), plots (torchsh://plot/N.png, image/png, a file the daemon wrote) and replay scripts
(torchsh://history/N.py, text/x-python).

The store is budgeted as everything else in torchsh: a total of bytes and a count, the oldest item dropped
first when a new one needs room; one item over `item_cap` is refused (too_large) rather than pushing out
everything else. Files live in the server's private folder (tempfile.mkdtemp: 0700, ours), removed on close.
"""
import os
import shutil
import stat
from collections import OrderedDict
from dataclasses import dataclass

from mcp.server.mcpserver.exceptions import ResourceError

from torchsh.errors import TorchshError

# (URI prefix, suffix, MIME type) per kind of item: `torchsh://plot/3.png` is kind "plot", number 3.
KINDS = {"out": ("", "text/plain"), "plot": (".png", "image/png"), "history": (".py", "text/x-python")}
MAX_BYTES = 256 << 20   # all items together
MAX_COUNT = 64          # items kept; an agent reads a big output soon after it is made, or not at all
ITEM_CAP = 4 << 20      # one item: a bigger output belongs in a file (`torch save`), not in a context window
TOO_LARGE_HINT = "write it to a file instead (`torch save H out.pt`), or ask for less (a slice, `inspect`)"


@dataclass
class Item:
    kind: str
    size: int
    text: str = None    # an output, held in memory
    path: str = None    # a file in the private folder (a plot)


class Store:
    """Numbered items, oldest first; `folder` is the server's private folder (made 0700 by mkdtemp)."""

    def __init__(self, folder, max_bytes=MAX_BYTES, max_count=MAX_COUNT, item_cap=ITEM_CAP):
        self.folder, self.max_bytes, self.max_count, self.item_cap = folder, max_bytes, max_count, item_cap
        self.items = OrderedDict()  # (kind, n) -> Item
        self.serial = 0

    @staticmethod
    def uri(kind, n):
        return "torchsh://%s/%d%s" % (kind, n, KINDS[kind][0])

    @staticmethod
    def mime(kind):
        return KINDS[kind][1]

    def put_text(self, kind, text, n=None):
        """Keep `text` as item `n` (reserved) or a new item of `kind` ("out" or "history"): its number.
        too_large over item_cap."""
        size = len(text.encode(errors="surrogateescape"))
        self._check_cap(size)
        n = self._next() if n is None else n
        self._admit((kind, n), Item(kind, size, text=text))
        return n

    def reserve_file(self, kind):
        """(number, path) for a file of `kind` that someone (the daemon) will write; `adopt_file` keeps it."""
        n = self._next()
        return n, os.path.join(self.folder, "%s-%d%s" % (kind, n, KINDS[kind][0]))

    def adopt_file(self, kind, n, path):
        """Keep the file written at `path` as item (kind, n), once it is proven a regular file of ours."""
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            raise TorchshError("untrusted", "%s is not a regular file of yours" % path, None)
        try:
            self._check_cap(st.st_size)
        except TorchshError:
            os.unlink(path)
            raise
        self._admit((kind, n), Item(kind, st.st_size, path=path))

    def read(self, kind, n):
        """The item's content (str for text, bytes for a file); ResourceError once dropped or never made."""
        item = self.items.get((kind, int(n))) if str(n).isdigit() else None
        if item is None:
            raise ResourceError("%s is not held: the store keeps the newest %d items; run the command again"
                                % (self.uri(kind, int(n) if str(n).isdigit() else 0), self.max_count))
        if item.text is not None:
            return item.text
        with open(item.path, "rb") as f:
            return f.read()

    def register(self, server):
        """Serve every kind as a resource template (resources/read torchsh://KIND/N…)."""
        for kind, (suffix, mime) in KINDS.items():
            server.resource("torchsh://%s/{n}%s" % (kind, suffix), name=kind, mime_type=mime,
                            description="a %s the tools kept" % kind)(self._reader(kind))

    def _reader(self, kind):
        def read(n: str):
            return self.read(kind, n)
        read.__name__ = "read_%s" % kind
        return read

    def close(self):
        shutil.rmtree(self.folder, ignore_errors=True)

    def held_bytes(self):
        return sum(item.size for item in self.items.values())

    def _next(self):
        self.serial += 1
        return self.serial

    def _check_cap(self, size):
        if size > self.item_cap:
            raise TorchshError("too_large", "the output is %d bytes, over the %d bytes one resource may hold"
                               % (size, self.item_cap), TOO_LARGE_HINT)

    def _admit(self, key, item):
        """Drop the oldest items until `item` fits the byte and count budgets, then keep it."""
        while self.items and (len(self.items) >= self.max_count
                              or self.held_bytes() + item.size > self.max_bytes):
            _, old = self.items.popitem(last=False)
            if old.path is not None:
                try:
                    os.unlink(old.path)
                except FileNotFoundError:
                    pass
        self.items[key] = item
