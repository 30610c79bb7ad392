"""Regenerate the checked-in artifacts that are made from the op table; `--check` only compares.

    .venv/bin/python tools/regen.py          # rewrite every artifact
    .venv/bin/python tools/regen.py --check  # exit 1 and name the stale ones (the tests do this too)

ARTIFACTS is the one list: (path from the repo root, function(table) -> text[, section]). Add a row for
a new one. A row with a section generates only the part of a hand-written file (the README) between
the lines `<!-- SECTION:begin ... -->` and `<!-- SECTION:end -->`; the rest of the file is left as it is
(one generated section per file).
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "src"))

import json  # noqa: E402

from torchsh import protocol  # noqa: E402
from torchsh.api import openapi  # noqa: E402
from torchsh.api.ops import JSON_REPLIES  # noqa: E402
from torchsh.daemon.routes import ROUTES  # noqa: E402
from torchsh.errors import errors_markdown, exit_table_markdown  # noqa: E402
from torchsh.shells import init_bash, launcher, nushell  # noqa: E402
from torchsh.table import build_table  # noqa: E402

ARTIFACTS = [
    ("src/torchsh/shells/torch.nu", nushell.module_text),
    ("docs/openapi.json", lambda table: json.dumps(openapi.document(ROUTES, table), indent=1) + "\n"),
    ("docs/errors.md", lambda table: errors_markdown()),
    ("README.md", lambda table: exit_table_markdown(), "exit-table"),
    ("docs/architecture.md", lambda table: replies_markdown(), "replies-table"),
    ("scripts/launchers/torch", lambda table: launcher.wheel()),  # what a wheel installs as `torch`
]

_FALLBACKS = {protocol.DAEMON: "the daemon carries it out itself and answers once", protocol.SKIP: "the output alone",
              protocol.REFUSE: "refused: `needs_client` (nothing ran)"}


_REFUSED_AS = {"upload": "remote_path", "download": "remote_path"}  # context.path's refusal names the path


def replies_markdown():
    """docs/architecture.md's table of protocol.REPLIES: each row, who carries it out, what others get."""
    callers = (("client", protocol.CLIENT_REPLIES), ("bash, zsh", init_bash.CARRIES), ("torch.nu", nushell.NU_REPLIES),
               ("JSON API (may list)", JSON_REPLIES))
    lines = ["| reply | header | fast | " + " | ".join(name for name, _ in callers) + " | a caller without it or "
             "handover gets | what the caller does |", "|---" * (5 + len(callers)) + "|"]
    for r in protocol.REPLIES:
        marks = " | ".join("yes" if r.name in names else "" for _, names in callers)
        fallback = _FALLBACKS[r.fallback].replace("needs_client", _REFUSED_AS.get(r.name, "needs_client"))
        lines.append("| `%s` | `%s` | %s | %s | %s | %s |" % (r.name, r.header, "`%s`" % r.letter if r.letter else "",
                                                                marks, fallback, r.meaning))
    return "\n".join(lines) + "\n"


def stale(table=None):
    """[(path, fresh text)] for every artifact whose file differs from what the generator makes now."""
    table = table or build_table()[0]
    out = []
    for path, generate, *section in ARTIFACTS:
        full = os.path.join(ROOT, path)
        current = open(full).read() if os.path.exists(full) else None
        text = generate(table)
        if section:
            text = with_section(current or "", section[0], text, path)
        if current != text:
            out.append((path, text))
    return out


def with_section(current, name, text, path):
    """`current` with the lines between its `name` markers replaced by `text`."""
    begin, end = "<!-- %s:begin" % name, "<!-- %s:end -->" % name
    start = current.find(begin)
    stop = current.find(end, start)
    if start < 0 or stop < 0:
        raise SystemExit("%s: no %s ... %s markers for the generated section" % (path, begin, end))
    start = current.index("\n", start) + 1  # the begin marker's line stays
    return current[:start] + text + current[stop:]


def main(argv):
    found = stale()
    if "--check" in argv:
        for path, _ in found:
            print("stale: %s (run: .venv/bin/python tools/regen.py)" % path)
        return 1 if found else 0
    for path, text in found:
        with open(os.path.join(ROOT, path), "w") as f:
            f.write(text)
        print("wrote %s" % path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
