"""Argument descriptions parsed from PyTorch's own docstrings: the "Args:" / "Keyword args:" /
"Arguments:" / "Parameters:" sections of torch.X, torch.Tensor.X, torch.nn.functional.X and the
torch.nn / torch.optim / lr_scheduler class docs. Nothing here is written per op: `torch OP --help`
shows what PyTorch's docs say, cleaned of Sphinx markup.

Pure text in, {name: description} out.
"""
import inspect
import re

_SECTION = re.compile(r"^(\s*)(Args|Arguments|Keyword args|Keyword arguments|Parameters|Params)\s*:\s*$", re.I)
# `name (type): text`, `name: text`, `*tensors (Tensor...): text`, `a, b (Tensor): text`
_ENTRY = re.compile(r"^\*{0,2}(?P<names>[A-Za-z_]\w*(?:\s*,\s*\*{0,2}[A-Za-z_]\w*)*)\s*(?:\((?P<type>[^)]*(?:\([^)]*\)[^)]*)*)\))?\s*:"
                    r"\s*(?P<text>.*)$")
_ROLE = re.compile(r":(?:attr|func|class|meth|ref|math|obj|mod|data|doc):`~?([^`<]*?)(\s*<[^>]*>)?`")


def arg_docs(obj, overloads=None):
    """{argument name: one-line description} from an object's docstring (a function, method or class),
    limited to the arguments of the given overloads when they are given."""
    try:
        doc = inspect.getdoc(obj) or ""
    except Exception:  # noqa: BLE001 - an odd object without a readable doc simply has none
        return {}
    found = parse(doc)
    if overloads is None:
        return found
    names = {a.name for ov in overloads for a in ov.args}
    return {k: v for k, v in found.items() if k in names}


def parse(doc):
    out = {}
    lines = doc.expandtabs().split("\n")
    i = 0
    while i < len(lines):
        m = _SECTION.match(lines[i])
        i += 1
        if not m:
            continue
        header_indent = len(m.group(1))
        entries, i = _section_entries(lines, i, header_indent)
        for names, text in entries:
            for name in names:
                out.setdefault(name, text)
    return out


def _section_entries(lines, i, header_indent):
    """The (names, text) entries of one section starting at lines[i], and the index after it."""
    entries, entry_indent, current = [], None, None
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        indent = len(line) - len(line.lstrip())
        if indent <= header_indent:
            break  # the next section or prose
        if entry_indent is None:
            entry_indent = indent
        m = _ENTRY.match(line.strip()) if indent == entry_indent else None
        if m:
            current = ([n.strip().lstrip("*") for n in m.group("names").split(",")], [m.group("text")])
            entries.append(current)
        elif indent > entry_indent and current is not None:
            current[1].append(line.strip())
        elif indent == entry_indent:
            current = None  # a line at entry level that is not an entry: not ours
        i += 1
    return [(names, _without_default(clean(" ".join(parts)))) for names, parts in entries], i


def _without_default(text):
    """Drop "Default: X." and "(default: X)": the help line shows the default torchsh really uses."""
    text = re.sub(r"\s*\((?:default|Default)\s*[:=][^()]*(?:\([^()]*\)[^()]*)*\)", "", text)
    text = re.sub(r"\s*Default\s*[:=]\s*.*?(?:\.(?=\s|$)|$)", "", text)
    return text.strip()


def clean(text):
    """Sphinx roles, literals and the commonest LaTeX to plain text, whitespace collapsed."""
    text = _ROLE.sub(r"\1", text)
    text = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"\1/\2", text)
    text = re.sub(r"\\(?:text|mathrm|mathbf|mathcal|operatorname)\{([^{}]*)\}", r"\1", text)
    text = text.replace("\\_", "_")
    text = text.replace("``", "").replace("`", "")
    return " ".join(text.split())
