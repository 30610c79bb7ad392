"""The CLI's stdout for a result: handles one per line, --json as compact JSON, tables as columns."""
from torchsh.registry.kinds import kind_of
from torchsh.results import Binary, LateJson, Text
from torchsh.text.jsonout import dumps


def cli_text(result, wire, as_json=False):
    """The stdout text for a result and its wire form."""
    if isinstance(result, Binary):
        return bytes(result)
    if isinstance(result, LateJson):
        return result.render(end=b"\n")
    if isinstance(result, Text):
        return result if result.endswith("\n") or not result else result + "\n"
    if wire is None:
        return ""
    if hasattr(result, "text") and callable(result.text) and not as_json:
        return result.text()
    if as_json:
        if getattr(result, "json_lines", False):  # rows as JSON lines (`torch fit --json`)
            return "".join(dumps(row) + "\n" for row in wire)
        return dumps(wire) + "\n"
    if isinstance(wire, dict) and _holds_objects(result):
        parts = result.values() if isinstance(result, dict) else result  # named tuples: field order
        return "".join(cli_text(r, v) for r, v in zip(parts, wire.values()))
    if isinstance(wire, list) and _holds_objects(result):
        return "".join(cli_text(r, v) for r, v in zip(result, wire))  # nested lists: one handle a line
    if isinstance(wire, str):
        return wire + "\n"
    return dumps(wire) + "\n"


def _holds_objects(result):
    if kind_of(result):
        return True
    if isinstance(result, (list, tuple)):
        return any(_holds_objects(x) for x in result)
    if isinstance(result, dict):
        return any(_holds_objects(x) for x in result.values())
    return False
