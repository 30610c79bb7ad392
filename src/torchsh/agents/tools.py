"""The MCP tools: a few general tools that reach every torchsh command (search, help, run) and the ones an
agent needs often enough to deserve their own (inspect, objects; runs, plot, history in artifacts.py).
The jobs tool is jobs.py's (server.py registers it).

Descriptions are short on purpose: every client pays for them in every conversation (`python -m
torchsh.agents --tools` prints them and their token count). Every result goes through bounded.py.
"""
from typing import Literal

from torchsh.agents import artifacts, bounded, catalog

# The info verb per handle kind (the part before ://): its argv before the handle. A kind without one is
# answered from its census row (GET /v1/tensors), which every kind has.
INFO_VERBS = {"tensor": ["describe"], "nn": ["nn", "info"], "optim": ["optim", "info"], "lm": ["lm", "info"],
              "data": ["data", "info"], "sched": ["sched", "lr"], "job": ["job", "logs"]}
# Census fields worth a word in a listing, in order; the rest are for `inspect`.
_CENSUS_FIELDS = ("shape", "type", "dtype", "device", "bytes")
JOB_HINT = "this command runs as a job: start it with the jobs tool, or add --detach and poll it"


def register(server, link, store):
    """Add the tools of this module and of artifacts.py to `server`."""
    found = catalog.Catalog(link)
    tools = Tools(link, store, found)
    for name, fn, description in (
            ("search", tools.search, "Find torchsh commands (PyTorch ops and verbs) by words; one line each."),
            ("help", tools.help, "One command's signatures, facts and an example, e.g. command='nn linear'."),
            ("run", tools.run, RUN_DESCRIPTION),
            ("inspect", tools.inspect, "Summarize an object without its data: a tensor's shape, dtype, stats, "
                                       "NaN count, corner; a model's, optimizer's, dataset's or job's info."),
            ("objects", tools.objects, "List the objects held, a page at a time (next_cursor continues)."),
    ):
        server.add_tool(bounded.guarded(fn), name=name, description=description, structured_output=False)
    artifacts.register(server, link, store)


RUN_DESCRIPTION = (
    "Run one torchsh command. argv as for the `torch` CLI without 'torch', e.g. [\"randn\",\"2\",\"3\"]. "
    "New objects come back as handles (tensor://…) to pass to later commands. stdin: lines (handles) for a "
    "command that reads them. Long work (fit, sweep, serve, lm generate) goes through jobs.")


class Tools:
    def __init__(self, link, store, found):
        self.link, self.store, self.catalog = link, store, found

    async def search(self, query: str, limit: int = 20):
        return bounded.text(await self.catalog.search(query, max(1, min(limit, 100))), self.store, "matches")

    async def help(self, command: str):
        return bounded.text(await self.catalog.help(command), self.store, "help")

    async def run(self, argv: list[str], stdin: str | None = None):
        if not argv:
            return bounded.error("usage", "argv is empty", "give a command, e.g. [\"randn\",\"3\"]")
        row = await self.command_row(argv)
        if row is not None and catalog.follows(row) and "--detach" not in argv:
            return bounded.error("usage", "%s follows a job until it ends" % catalog.display_name(row), JOB_HINT)
        return bounded.outcome(await self.link.cli(argv, stdin), self.store)

    async def command_row(self, argv):
        """The table row the first words of argv name (`nn linear 3 2` -> nn.linear), or None."""
        await self.catalog.all_rows()
        for count in (3, 2, 1):
            row = self.catalog.by_name.get(".".join(argv[:count]))
            if row is not None and len(argv) >= count:
                return row
        return None

    async def inspect(self, handle: str):
        kind = handle.split("://", 1)[0] if "://" in handle else None
        if kind is None:
            census = await self.census_row(handle)
            kind = census["kind"] if census else None
        verb = INFO_VERBS.get(kind)
        if verb is not None:
            outcome = await self.link.cli(verb + [handle])
            unknown_verb = outcome.error and outcome.error.get("code") == "unknown_op"
            if not unknown_verb:  # a daemon without the verb (older): its census row says what it can
                return bounded.outcome(outcome, self.store)
        census = await self.census_row(handle)
        if census is None:
            return bounded.error("unknown_handle", "no object %s" % handle, "the objects tool lists them")
        return bounded.text(" ".join("%s=%s" % item for item in census.items()), self.store, "census row")

    async def census_row(self, handle):
        """The census row of `handle` (or of the object named so), or None."""
        objects = (await self.link.get_json("/v1/tensors"))["objects"]
        return next((o for o in objects if o["handle"] == handle or handle in o.get("names", ())), None)

    async def objects(self, kind: str | None = None, sort: Literal["handle", "bytes"] = "handle",
                      cursor: str | None = None, limit: int = 20):
        rows = (await self.link.get_json("/v1/tensors"))["objects"]
        return bounded.text(census_page(rows, kind, sort, cursor, limit), self.store, "objects")


def census_page(rows, kind, sort, cursor, limit):
    """One page of the census as text: a header line, one line per object, and next_cursor when more."""
    rows = [r for r in rows if kind is None or r["kind"] == kind]
    if sort == "bytes":
        rows.sort(key=lambda r: (-(r.get("bytes") or 0), r["handle"]))
    else:
        rows.sort(key=lambda r: r["handle"])
    start = int(cursor) if cursor and cursor.isdigit() else 0
    limit = max(1, min(limit, 200))
    page = rows[start:start + limit]
    total = sum(r.get("bytes") or 0 for r in rows)
    lines = ["%d objects, %d bytes; %d-%d:" % (len(rows), total, start + 1 if page else start, start + len(page))]
    lines += [census_line(r) for r in page]
    if start + limit < len(rows):
        lines.append("next_cursor: %d" % (start + limit))
    return "\n".join(lines)


def census_line(row):
    words = [row["handle"], row["kind"]]
    for key in _CENSUS_FIELDS:
        value = row.get(key)
        if value is not None and value != "":
            words.append(("[%s]" % ",".join(map(str, value))) if key == "shape" else
                         "%sB" % value if key == "bytes" else str(value))
    if row.get("names"):
        words.append("names=" + ",".join(row["names"]))
    return " ".join(words)
