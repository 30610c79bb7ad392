"""Tool results that fit an agent's context: every result is at most LIMIT bytes of JSON-serialized content.

An answer too big for that is kept in the store as a resource (torchsh://out/N) and the result becomes one
line saying what it is and where, plus as much of its head as fits. Errors are tool errors (isError) whose
text is compact JSON {"code", "message", "hint"}, the daemon's own error row.
"""
import functools
import json
import logging

from mcp_types import CallToolResult, ResourceLink, TextContent

from torchsh.agents.store import TOO_LARGE_HINT
from torchsh.errors import TorchshError

LIMIT = 8192          # bytes of a result's content as JSON (the bound)
_ROOM = 400           # what the summary line, the link and JSON's quoting may take besides the head


def size(result):
    """The bytes of `result`'s content as JSON (what travels in the tool result, less its envelope)."""
    blocks = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
    return len(json.dumps(blocks, separators=(",", ":")).encode())


def text(body, store, what="output"):
    """A result of `body`: itself when it fits, else kept as torchsh://out/N with a summary and its head."""
    result = CallToolResult(content=[TextContent(type="text", text=body)])
    if size(result) <= LIMIT:
        return result
    n = store.put_text("out", body)
    uri = store.uri("out", n)
    lines = body.count("\n") + (not body.endswith("\n"))
    summary = "%s: %d bytes, %d lines, kept as %s (resources/read); its head:\n" % (
        what, len(body.encode(errors="surrogateescape")), lines, uri)
    return _with_head(summary, body, [link(uri, "out-%d" % n, store.mime("out"), "the whole %s" % what)])


def _with_head(summary, body, extra):
    """summary + the longest head of `body` (whole lines where possible) that keeps the result within LIMIT."""
    budget = LIMIT - _ROOM - len(summary.encode())
    head = fit_head(body, budget)
    result = CallToolResult(content=[TextContent(type="text", text=summary + head)] + extra)
    while size(result) > LIMIT and head:  # JSON escapes (\" \n \uXXXX) can outgrow the guess: halve it
        head = fit_head(head, len(head.encode()) // 2)
        result = CallToolResult(content=[TextContent(type="text", text=summary + head)] + extra)
    return result


def fit_head(body, budget):
    """The longest prefix of `body` within `budget` bytes as JSON text, cut at a line end when one is near."""
    raw = body.encode(errors="surrogateescape")
    if _json_len(body) <= budget:
        return body
    cut = raw[:max(0, budget)].decode(errors="ignore")
    while cut and _json_len(cut) > budget:
        cut = cut[:len(cut) * 3 // 4]
    line_end = cut.rfind("\n")
    return cut[:line_end + 1] if line_end > len(cut) // 2 else cut


def _json_len(s):
    return len(json.dumps(s).encode()) - 2


def link(uri, name, mime, description=None, size_bytes=None):
    """A resource_link content block: the agent reads it through resources/read when it wants to."""
    return ResourceLink(type="resource_link", uri=uri, name=name, mime_type=mime, description=description,
                        size=size_bytes)


def linked(summary, uri, name, mime, size_bytes=None):
    """A result that is one line and a link (a plot, a replay script)."""
    return CallToolResult(content=[TextContent(type="text", text=summary), link(uri, name, mime, None, size_bytes)])


def error(code, message, hint=None, output=""):
    """A tool error: one text block, compact JSON {"code","message","hint"} (each bounded), and "output": the
    head of what the command printed before it failed, when it printed anything."""
    row = {"code": code, "message": _cut(message, 2000), "hint": None if hint is None else _cut(hint, 1000)}
    budget = LIMIT - _ROOM - _json_len(json.dumps(row))
    while True:
        if output:  # escaped twice (a JSON string in JSON text): halve it until the whole fits
            row["output"] = fit_head(output, budget)
        result = CallToolResult(content=[TextContent(type="text", text=json.dumps(row, separators=(",", ":")))],
                                is_error=True)
        if not output or size(result) <= LIMIT or budget <= 0:
            return result
        budget //= 2


def _cut(text, most):
    return text if len(text) <= most else text[:most] + "…"


def from_error(e):
    """A TorchshError as a tool error."""
    return error(e.code, e.message, e.hint)


def failed(outcome):
    """A failed command's Outcome (link.Outcome) as a tool error: its error row, and its stdout's head if any."""
    err = outcome.error or {}
    return error(err.get("code") or "internal_error", err.get("message") or "failed", err.get("hint"),
                 outcome.stdout)


def outcome(done, store):
    """A command's link.Outcome as a tool result: its output (bounded), warnings after it; or its error."""
    if done.error is not None:
        return failed(done)
    if done.truncated:
        return error("too_large", "the output is %d bytes, over the %d bytes one resource may hold"
                     % (done.stdout_bytes, store.item_cap), TOO_LARGE_HINT, done.stdout)
    body = done.stdout if done.stdout else "ok (no output)\n"
    if done.stderr.strip():
        body += "stderr: " + done.stderr
    if done.exit:
        body += "(exit %d)\n" % done.exit
    return text(body, store)


def guarded(fn):
    """Wrap an async tool so that a TorchshError becomes its tool error (never the SDK's bare text)."""
    @functools.wraps(fn)
    async def tool(*args, **kwargs):
        try:
            return await fn(*args, **kwargs)
        except TorchshError as e:
            return from_error(e)
        except Exception as e:  # a bug of ours: still one error row for the agent; the traceback to stderr
            logging.getLogger(__name__).exception("tool %s failed", fn.__name__)
            return error("internal_error", "%s: %s" % (type(e).__name__, e), "a bug in torch mcp: see its stderr")
    return tool
