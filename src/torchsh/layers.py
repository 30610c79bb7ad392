"""The house's floors, lowest first: each room (a folder, or a module at the package's top) sits on one, and
imports only from its own floor or lower (tests/unit/test_layers.py pins it, in-function imports included).
docs/architecture.md draws them. Builtins only; nothing at run time reads this.

A floor names what its rooms are for; a room's own line is in docs/architecture.md's table.
"""

LAYERS = (
    ("wire and shared", ("__init__", "protocol", "paths", "trust", "privatesocket", "orphans", "quoting", "cachefiles", "errors",
                         "warned", "results", "link", "wire", "layers")),
    ("libraries and text", ("fileio", "vocab", "guards", "memory", "text")),
    ("formats", ("formats", "plot")),
    ("data and jobs", ("data", "contract", "jobs", "profile")),
    ("recipes", ("recipes", "lm")),
    ("registry", ("registry",)),
    ("kinds and table", ("table",)),
    ("call and features", ("call", "context", "train", "sweep", "serve", "session", "history", "remote", "models")),
    ("faces", ("cli", "api", "shells")),
    ("daemon and client", ("daemon", "client", "install", "agents")),
    ("verbs", ("verbs",)),
)

# Imports that climb on purpose, each with why; the list may only shrink.
ALLOWED_CLIMBS = (
    # the op table finds the hand-written verbs' rows (table/build.py): their discovery, not a use
    ("torchsh.table.build", "torchsh.verbs"),
)


def floor_of(room):
    """The index of ROOM's floor (0: the ground), or None for a room no floor names."""
    return next((i for i, (_, rooms) in enumerate(LAYERS) if room in rooms), None)
