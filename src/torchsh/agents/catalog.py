"""The command catalog an agent searches instead of reading ~1,000 tool definitions: the daemon's op table
(GET /v1/ops), cached per daemon epoch, ranked by the words of a query; and one command's compact schema
(GET /v1/ops/{op}: its signatures, whether it is read-only or follows a job, and an example from its help).
"""
import re

from torchsh.errors import TorchshError

_WORD = re.compile(r"[a-z0-9_]+")


def display_name(row):
    """What users type: a verb's dotted name is words (`nn save`), an op keeps its own (`linalg.qr`)."""
    return row["name"].replace(".", " ") if row.get("verb") else row["name"]


def op_name(command):
    """The table's name for what a user typed: `nn save` -> nn.save, `torch add` -> add."""
    words = command.split()
    if words[:1] == ["torch"]:
        words = words[1:]
    return ".".join(words)


def follows(row):
    """Whether the command answers with a job to follow (fit, sweep, serve, lm generate, job wait…)."""
    return "follow" in row.get("replies", ())


def score(row, terms):
    """How well `row` matches the query's words: the sum over its words (a name beats an alias beats the
    summary), and a little more for each further word that matches (0: none does)."""
    name, display = row["name"].lower(), display_name(row).lower()
    name_words = set(_WORD.findall(display))
    aliases = {a.lower() for a in row.get("aliases", ())}
    summary = row.get("summary", "").lower()
    summary_words = set(_WORD.findall(summary))
    points = [100 if term in (name, display) else 60 if term in aliases else 40 if term in name_words
              else 20 if term in name else 10 if term in summary_words else 4 if term in summary
              else 2 if term == row.get("category") else 0 for term in terms]
    matched = sum(1 for p in points if p)
    return sum(points) + 10 * (matched - 1) if matched else 0


def rank(rows, query, limit):
    """The `limit` best rows for `query`: best score first, then shorter names (`add` before `addmm`)."""
    terms = _WORD.findall(query.lower())
    if not terms:
        return []
    scored = [(score(row, terms), row) for row in rows]
    scored = [(s, row) for s, row in scored if s > 0]
    scored.sort(key=lambda pair: (-pair[0], len(pair[1]["name"]), pair[1]["name"]))
    return [row for _, row in scored[:max(1, limit)]]


def line(row):
    """One search hit: `NAME: summary` (and what it is besides: read-only, a job)."""
    marks = [m for m, on in (("read-only", row.get("read_only")), ("job", follows(row))) if on]
    return "%s: %s%s" % (display_name(row), row.get("summary", ""), " [%s]" % ", ".join(marks) if marks else "")


def schema(row, example=None):
    """One command's compact schema: its signatures (words in order, or --name VALUE; after * only
    --name VALUE), what it is, and an example."""
    out = ["torch %s: %s" % (display_name(row), row.get("summary", ""))]
    out += row.get("signatures", [])
    facts = ["read-only" if row.get("read_only") else "may change state" if "read_only" in row else None,
             "starts a job: use the jobs tool, or add --detach" if follows(row) else None]
    out += [fact for fact in facts if fact]
    if example:
        out.append("example: " + example)
    return "\n".join(out)


def example_of(help_text):
    """The first example line of `torch CMD --help`'s text, or None."""
    lines = help_text.splitlines()
    for i, text in enumerate(lines):
        if text.strip() in ("example:", "examples:") and i + 1 < len(lines):
            return lines[i + 1].strip() or None
    return None


class Catalog:
    """The op table's rows, fetched once per daemon epoch (a restarted daemon may have other verbs)."""

    def __init__(self, link):
        self.link = link
        self.epoch, self.rows, self.by_name = None, [], {}

    async def all_rows(self):
        epoch = (await self.link.get_json("/v1/status")).get("epoch")
        if epoch != self.epoch or not self.rows:
            self.rows = (await self.link.get_json("/v1/ops"))["ops"]
            self.by_name = {row["name"]: row for row in self.rows}
            for row in self.rows:
                for alias in row.get("aliases", ()):
                    self.by_name.setdefault(alias, row)
            self.epoch = epoch
        return self.rows

    async def row(self, command):
        """The table row of `command` (as typed: `nn save`), or TorchshError unknown_op."""
        await self.all_rows()
        row = self.by_name.get(op_name(command))
        if row is None:
            raise TorchshError("unknown_op", "no command named %r" % command, "the search tool finds commands")
        return row

    async def search(self, query, limit):
        hits = rank(await self.all_rows(), query, limit)
        if not hits:
            return "no command matches %r; try other words (an op's name, or what it does)" % query
        return "\n".join(line(row) for row in hits)

    async def help(self, command):
        row = await self.row(command)
        argv = display_name(row).split() + ["--help"]
        outcome = await self.link.cli(argv)
        return schema(row, example_of(outcome.stdout) if outcome.exit == 0 else None)
