"""Discovery: `torch ops [CATEGORY] [--search WORD] [--excluded] [--json]`, and what a group word lists (`torch nn`)."""
from torchsh.errors import bad_argument
from torchsh.results import Text
from torchsh.table import exclusions, from_torch
from torchsh.table.categories import CATEGORIES
from torchsh.table.groups import GROUP_WORDS, listing_rows
from torchsh.verbs import verb

VERB_CATEGORIES = ("tensors", "files", "autograd", "nn", "optim", "lm", "objects", "daemon", "shell")

_KIND_WORDS = {"nn": "module kinds (torch.nn classes)", "optim": "optimizer kinds (torch.optim)",
               "sched": "scheduler kinds (torch.optim.lr_scheduler)", "dist": "distribution kinds (torch.distributions)"}


class OpRows(list):
    def __init__(self, ops):
        super().__init__(op.to_json() for op in ops)
        self._ops = ops

    def text(self):
        return ops_table(self._ops)


class ExcludedRows(list):
    """{name, group, reason} rows; as text an aligned table, public names first."""
    def text(self):
        width = min(max((len(r["name"]) for r in self), default=10), 32)  # a longer name overflows its column
        group = max((len(r["group"]) for r in self), default=5)
        return Text("".join("%-*s  %-*s  %s\n" % (width, r["name"], group, r["group"], r["reason"]) for r in self))


@verb("ops(str? category=None, *, str? search=None, bool excluded=False) -> Json", category="shell", lockfree=True,
      examples=("torch ops linalg",
                "torch ops --search softmax",
                "torch ops --excluded deprecated"), read_only=True)
def ops(ctx, category=None, search=None, excluded=False):
    """List ops and verbs: name, category, summary (--json adds the typed signatures).

    Args:
        category: only this category's ops (`torch ops --excluded GROUP`: only this group of left-out ones)
        search: only ops whose name or summary holds this word (any case), then those whose arguments' names
            or descriptions hold it
        excluded: list the PyTorch functions the table leaves out instead, each with its group and reason
    """
    if excluded:
        return excluded_ops(category, search)
    if category is not None and category not in categories():
        raise bad_argument("unknown category %r" % category, "categories: %s" % ", ".join(categories()))
    rows = sorted(ctx.table.in_category(category), key=lambda op: op.name)
    return OpRows(searched(rows, search.lower()) if search else rows)


def searched(rows, word):
    """The ops whose name or summary holds `word`, then those whose arguments' names or descriptions
    (PyTorch's docs, table/docargs.py) do: `--search 'weight decay'` finds the optimizers."""
    named = [op for op in rows if word in op.name.lower() or word in op.summary.lower()]
    seen = {op.name for op in named}
    by_args = [op for op in rows if op.name not in seen
               and any(word in name.lower() or word in text.lower() for name, text in op.arg_docs.items())]
    return named + by_args


def excluded_ops(group=None, search=None):
    """`torch ops --excluded [GROUP] [--search WORD]`: what table/exclusions.py leaves out, and why."""
    groups = exclusions.excluded(from_torch.NAMESPACES)
    if group is not None and group not in groups:
        raise bad_argument("unknown group of excluded ops %r" % group, "groups: %s" % ", ".join(sorted(groups)))
    rows = [{"name": name, "group": g, "reason": reason}
            for g, (reason, names) in groups.items() if group in (None, g) for name in names]
    if search:
        word = search.lower()
        rows = [r for r in rows if any(word in r[k].lower() for k in ("name", "group", "reason"))]
    return ExcludedRows(sorted(rows, key=lambda r: (r["name"].startswith("_"), r["name"])))


def group_help(table, group):
    """`torch GROUP`, `torch GROUP --help`: the group's commands, one line each, then its kinds and sub-groups."""
    spoken = group.replace(".", " ")
    lines = ["usage: torch %s COMMAND [ARG…]" % spoken, ""]
    if group in GROUP_WORDS:
        lines += ["%s" % GROUP_WORDS[group], ""]
    own = table.lookup(group)[0] if _resolvable(table, group) else None
    if own is not None:  # `torch scope -- CMD`, `torch fft TENSOR`: the group word runs an op itself
        lines += ["  torch %s" % own.usage_line().replace(own.display_name, spoken, 1), "      " + own.summary, ""]
    commands, kinds, subgroups = [], {}, []
    for word, op in sorted(table.members(group).items(), key=lambda kv: kv[0].lower()):
        if op is None or (word in table.groups and group + "." + word in table.groups):
            subgroups.append((word + " …", GROUP_WORDS.get(group + "." + word, "%d commands: `torch %s %s`"
                                                            % (len(table.groups[group + "." + word]), spoken, word))))
            continue
        label = _KIND_WORDS.get(op.class_kind)
        if label:
            kinds.setdefault(label, []).append((word, op.summary))
        else:
            commands.append((word, op.summary))
    if commands:
        lines += ["commands:"] + listing_rows(commands) + [""]
    for label, rows in kinds.items():
        lines += ["%s:" % label] + listing_rows(rows) + [""]
    if subgroups:
        lines += ["groups:"] + listing_rows(subgroups) + [""]
    lines.append("`torch %s COMMAND --help` shows one command's arguments and an example." % spoken)
    return Text("\n".join(lines) + "\n")


def _resolvable(table, name):
    try:
        table.lookup(name)
        return True
    except Exception:  # unknown or ambiguous: the group word is no op of its own
        return False


def ops_table(ops):
    width = max((len(op.name) for op in ops), default=10)
    rows = ["%-*s  %-10s  %s" % (width, op.name, op.category, op.summary) for op in ops]
    return Text("\n".join(rows) + ("\n" if rows else ""))


def categories():
    return CATEGORIES + VERB_CATEGORIES
