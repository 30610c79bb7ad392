"""Errors as data: TorchshError(code, message, hint). Daemon side only.

Handlers raise these and nothing else; the edges (cli/render.py for text, api/ for JSON) turn them
into a one-line message or a JSON body. Codes and their HTTP/exit statuses live in protocol.ERRORS.
"""
import re

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
    if "expected sequence of length" in low or "could not infer dtype" in low or "invalid data type" in low \
            or "too many dimensions" in low:
        # torch.tensor(data) refusing JSON: ragged rows, mixed types, objects, or nesting past PyTorch's limit
        return TorchshError("bad_argument", "the data is not a rectangular array of numbers: %s" % text,
                            "every row needs the same length and only numbers or booleans, e.g. '[[1,2],[3,4]]'")
    if "overflow when unpacking" in low or "int too large" in low or "too large to convert" in low:
        return TorchshError("bad_argument", "a number is out of range: %s" % text,
                            "integers must fit in 64 bits (-2**63 .. 2**63-1)")
    if "not compiled with" in low or "no cuda gpus are available" in low or "found no nvidia driver" in low:
        return device_unavailable(text, "mps" if "mps" in low else "xpu" if "xpu" in low else "cuda")
    if _DTYPE.search(text):
        code = "dtype_error"
    elif _SHAPE.search(text) and not _INDEX_VALUE.search(text):
        code = "shape_mismatch"
    elif "backward" in low or "grad" in low:
        code = "autograd_error"
    elif "device" in low or "cuda" in low:
        code = "device_error"
    else:
        code = "torch_error"
    return TorchshError(code, text)


# PyTorch's wording for dtypes it cannot use (checked first: "mat1 and mat2 must have the same dtype")
_DTYPE = re.compile(r"dtype|scalar type|not implemented for '|only tensors of floating point|result type|"
                    r"floating point and complex dtype|can't be cast to the desired output type", re.I)
# PyTorch's wording for tensor shapes that do not fit the op or each other (seen on 2.13; tests/unit/test_error_codes.py)
_SHAPE = re.compile("|".join((
    r"\b\d-?D\b",                                   # "batch1 must be a 3D tensor", "Expected 1-D argument"
    r"must be an? (matrix|vector|square)|expected a matrix|batches of square matrices|must be square",
    r"shape|size mismatch|sizes? (of tensors )?must match|must match the (existing )?size|same size|equal size",
    r"cannot be multiplied|invalid for input of size|number of (elements|dimensions|sizes)|same number of",
    r"\bdimensions?\b.*\b(expected|must|got)\b|\b(expected|must|got)\b.*\bdimensions?\b",
    r"tensor size|input size|output size|kernel size|batch_size|dimension size|size of dim|channels?\b",
    r"don't multiply up|split_sizes|should contain \d+ elements|input\.size|divisible",
    r"padding length|does not match weight size|does not broadcast|broadcast|last dimension of size",
)), re.I)
# an index value outside a tensor: the index is wrong, not the shapes
_INDEX_VALUE = re.compile(r"\bindex -?\d+ (is )?out of (bounds|range)|selected index", re.I)


# The private module names `torch model open FILE.py:CLASS` imports the caller's files under
# (recipes/modelopen.py): an exception their code raises is the caller's, as one PyTorch raises is
USER_MODULE_PREFIX = "torchsh_user_"


def raised_by_torch(exc):
    """Did PyTorch's own Python code (or a model file of the caller's) raise exc? Its meta kernels and linalg
    helpers check arguments with AssertionError (`A must be square`) and its modules divide by arguments
    (GroupNorm(8, 0): modulo by zero): the caller's mistake. The same exception raised in torchsh's code is
    a bug."""
    import os
    import torch
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None and str(tb.tb_frame.f_globals.get("__name__")).startswith(USER_MODULE_PREFIX):
        return True
    return tb is not None and tb.tb_frame.f_code.co_filename.startswith(os.path.dirname(torch.__file__) + os.sep)


def device_unavailable(what, device_type="cuda"):
    """device_error for a device this PyTorch build or machine lacks: say which devices exist and what to do."""
    import torch  # daemon side only, imported lazily like everything else that needs PyTorch here
    have = ["cpu"]
    if torch.cuda.is_available():
        have += ["cuda:%d" % i for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        have.append("mps")
    build = "a CPU-only build" if torch.version.cuda is None and torch.version.hip is None else "a GPU build"
    if device_type == "mps":
        hint = "use --device cpu; mps needs macOS on Apple silicon with PyTorch's macOS wheel"
    elif device_type in ("cuda", "xpu"):
        hint = ("use --device cpu, or install a %s build of PyTorch (see https://pytorch.org/get-started/locally/)"
                " and run `torch daemon restart`" % ("CUDA" if device_type == "cuda" else "XPU"))
    else:
        hint = "use --device cpu"
    return TorchshError("device_error", "%s: PyTorch %s is %s; devices here: %s"
                        % (what, torch.__version__, build, " ".join(have)), hint)


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


def exit_status_line():
    """`torch --help`'s last line: every exit status by its short name (generated, never copied)."""
    return "exit status: " + ", ".join("%d %s" % (status, short)
                                       for status, (short, _) in sorted(protocol.EXIT_CLASSES.items()))


def exit_table_markdown():
    """The README's exit-status table: each status, its class, and every code of that class (generated;
    tools/regen.py writes it between the README's exit-table markers)."""
    lines = ["| status | class | codes |", "|---|---|---|"]
    for status, (_, text) in sorted(protocol.EXIT_CLASSES.items()):
        codes = [code for code, (_, exit_code, _) in protocol.ERRORS.items() if exit_code == status]
        cell = ", ".join("`%s`" % c for c in codes)
        lines.append("| %d | %s | %s|" % (status, text, cell + " " if cell else ""))
    return "\n".join(lines) + "\n"
