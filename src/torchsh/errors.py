"""Errors as data: TorchshError(code, message, hint). Daemon side only.

Handlers raise these and nothing else; the edges (cli/render.py for text, api/ for JSON) turn them
into a one-line message or a JSON body. Codes and their HTTP/exit statuses live in protocol.ERRORS.
"""
from torchsh import protocol


class TorchshError(Exception):
    def __init__(self, code, message, hint=None, op=None):
        assert code in protocol.ERRORS, code
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint
        self.op = op

    def to_json(self):
        return {"error": {"code": self.code, "message": self.message, "hint": self.hint, "op": self.op}}

    def line(self):
        """The one line the CLI prints: `torch: OP: message (hint) [code]`."""
        where = "%s: " % self.op if self.op else ""
        hint = "; %s" % self.hint if self.hint else ""
        return "torch: %s%s%s [%s]" % (where, self.message, hint, self.code)


def usage(message, hint=None):
    return TorchshError("usage", message, hint)


def bad_argument(message, hint=None):
    return TorchshError("bad_argument", message, hint)


def from_torch_exception(exc):
    """Classify an exception PyTorch raised into a stable code, keeping its first line."""
    text = str(exc).strip().split("\n")[0] or type(exc).__name__
    low = text.lower()
    if "size of tensor" in low or "must match the size" in low or "broadcast" in low or "shape" in low \
            or "mat1 and mat2" in low or "dimension" in low and "expected" in low:
        code = "shape_mismatch"
    elif "dtype" in low or "not implemented for" in low or "expected scalar type" in low \
            or "only tensors of floating point" in low or "result type" in low:
        code = "dtype_error"
    elif "backward" in low or "grad" in low:
        code = "autograd_error"
    elif "device" in low or "cuda" in low:
        code = "device_error"
    else:
        code = "torch_error"
    return TorchshError(code, text)


def errors_markdown():
    """docs/errors.md: every code with its HTTP status, exit status and meaning (generated)."""
    lines = ["# Error codes", "",
             "Every failure is one line on stderr, `torch: OP: message; hint [code]`, and the exit status of its",
             "class. The JSON API answers `{\"error\": {code, message, hint, op}}` with the HTTP status below.",
             "Codes never change once shipped. Generated from `torchsh.protocol.ERRORS` by tools/regen.py.", "",
             "| code | HTTP | exit | meaning |", "|---|---|---|---|"]
    for code, (http, exit_code, meaning) in sorted(protocol.ERRORS.items(), key=lambda kv: (kv[1][1], kv[0])):
        lines.append("| `%s` | %d | %d | %s |" % (code, http, exit_code, meaning))
    return "\n".join(lines) + "\n"
