"""POST /v1/cli: argv in, (stdout, stderr, exit status) out, or a request for stdin lines.

The order of work: resolve the op name, split flags, bind an overload (asking the client for
stdin lines when tensor slots are missing), run it under the tensor lock, render. Every failure
becomes one line `torch: OP: message; hint [code]` and its exit status.
"""
import contextlib
import functools
import inspect
import logging
import re
import traceback
import warnings
from dataclasses import dataclass

import torch

from torchsh import guards, memory, protocol
from torchsh.cli import bind, help as cli_help, parse, render
from torchsh.cli import kinds, tokens
from torchsh.cli.tokens import Token
from torchsh.context import Context
from torchsh.errors import TorchshError, from_torch_exception, raised_by_torch

log = logging.getLogger("torchd")

# One command-line word may hold at most this much (a JSON tensor literal, a path). Bigger data goes
# through a file (`torch load`) or the JSON API's .npy upload; refusing early keeps a 1 MiB word from
# costing a JSON parse, a binder pass and an error message that quotes it.
MAX_WORD_BYTES = 256 * 1024


@dataclass
class CliReply:
    stdout: str = ""
    stderr: str = ""
    exit: int = 0
    need_stdin: int = None    # ask the client for N lines (-1: all) and resend
    exec_body: bytes = None   # ask the client to run a command (block forms)
    headers: dict = None      # extra reply headers a verb sets (`daemon stop`: pid and settings)


class ExecRequest(Exception):
    """Raised by block-form verbs (`scope -- CMD`): the client must run argv with env, then then_argv."""

    def __init__(self, argv, env, then_argv=()):
        super().__init__("exec")
        self.argv, self.env, self.then_argv = argv, env, list(then_argv)


def run_cli(app, request):
    ctx = Context(app, request["cwd"], request["env"], request["stdin_is_tty"], request["stdin"],
                  peer_pid=request.get("peer_pid"))
    argv = request["argv"]
    op_name = argv[0][:60] if argv else None
    try:
        _check_word_sizes(argv)
        if not argv or argv[0] in ("-h", "--help", "help"):
            return CliReply(stdout=cli_help.overview(app.table))
        if argv[0] in ("--version", "version"):
            return CliReply(stdout="torchsh %s (torch %s)\n" % (app.version, torch.__version__))
        op, fixed, words = app.table.resolve(argv)
        op_name = op.display_name
        return _run_op(ctx, op, fixed, words)
    except ExecRequest as e:
        return CliReply(exec_body=protocol.encode_exec(e.argv, e.env, e.then_argv))
    except TorchshError as e:
        e.op = e.op or op_name
        return CliReply(stderr=e.line() + "\n", exit=protocol.exit_status(e.code))
    except Exception:  # a bug in torchsh: keep the daemon alive, log the traceback
        log.error("internal error on %r\n%s", argv, traceback.format_exc())
        err = TorchshError("internal_error", "internal error", "the daemon log %s has the traceback" % app.log_path,
                           op=op_name)
        return CliReply(stderr=err.line() + "\n", exit=protocol.EXIT_INTERNAL)


def _check_word_sizes(argv):
    for i, word in enumerate(argv):
        if len(word) > MAX_WORD_BYTES // 4 and len(word.encode(errors="surrogateescape")) > MAX_WORD_BYTES:
            raise TorchshError("too_large", "word %d of the command line is %d bytes, over the %d KiB limit"
                               % (i + 1, len(word.encode(errors="surrogateescape")), MAX_WORD_BYTES // 1024),
                               "put bulk data in a file and `torch load` it (or POST an .npy to /v1/tensors)")


def _run_op(ctx, op, fixed, words):
    parsed = parse.split_argv(op, words, fixed)
    if parsed.globals.get("help"):
        return CliReply(stdout=cli_help.op_help(op))
    flags = dict(parsed.flags)
    if parsed.argv_rest is not None:
        argv_arg = next((a for a in op.flags().values() if a.kind == "argv"), None)
        if argv_arg is None:
            raise TorchshError("usage", "%s takes no command after --" % op.name, op.usage())
        flags[argv_arg.name] = Token("argv", parsed.argv_rest, "--")
    binding = _bind_with_stdin(ctx, op, parsed, flags)
    if isinstance(binding, CliReply):
        return binding
    warned = []
    result = invoke(ctx, op, binding, parsed.globals, warned)
    wire = render.to_wire(result, ctx)
    return CliReply(stdout=render.cli_text(result, wire, parsed.globals.get("json", False)),
                    stderr="".join("torch: %s: warning: %s\n" % (op.display_name, w) for w in warned),
                    headers=getattr(result, "reply_headers", None))


def _bind_with_stdin(ctx, op, parsed, flags):
    """The binding to run, or a CliReply asking the client for stdin lines (then the request comes again
    with them). `-` takes exactly one line each; without `-`, stdin fills the tensor slots the given words
    left open, and is read only when that fits the words better than any binding of the words alone."""
    if parse.stdin_marks(parsed):
        return _bind_marked(ctx, op, parsed, flags)
    binding, partials = bind.choose(op, parsed.positionals, flags)
    # every word fits its slot exactly: stdin could fit nothing better, so skip the search (it is per command)
    exact = binding is not None and binding.score >= 3 * (len(parsed.positionals) + len(flags))
    open_ = None if ctx.stdin_is_tty or exact else bind.stdin_choice(op, parsed.positionals, flags)
    if open_ is None or (binding is not None and binding.score >= open_.score):
        if binding is None:
            raise no_binding(op, partials, parsed.positionals, flags)
        return binding
    need = open_.need()
    if ctx.stdin is None:
        return CliReply(need_stdin=need)
    toks = [tokens.from_word(line) for line in ctx.stdin if line.strip()]
    text = "\n".join(ctx.stdin) if any(a.kind in bind.STDIN_TEXT_KINDS for a in open_.holes) else None
    filled = bind.fill_stdin(op, parsed.positionals, flags, [] if text is not None else toks, text) if toks else None
    if filled is not None:
        return filled
    if binding is not None and not toks:  # stdin was empty (</dev/null): the words alone it is
        return binding
    if need != bind.ALL and len(toks) < need:
        raise TorchshError("missing_argument", "expected %d handle(s) on stdin, got %d" % (need, len(toks)),
                           op.usage())
    raise no_binding(op, partials, toks + parsed.positionals, flags)


def _bind_marked(ctx, op, parsed, flags):
    """Each `-` is one stdin line, in order; nothing else comes from stdin."""
    need = parse.stdin_marks(parsed)
    if ctx.stdin is None:
        if ctx.stdin_is_tty:
            raise TorchshError("usage", "`-` stands for a handle on stdin, but stdin is a terminal",
                               "pipe one in: echo $t | torch %s -" % op.display_name)
        return CliReply(need_stdin=need)
    lines = [line for line in ctx.stdin if line.strip()]
    if len(lines) < need:
        raise TorchshError("missing_argument", "expected %d handle(s) on stdin for `-`, got %d" % (need, len(lines)),
                           op.usage())
    positionals, flags = parse.put_stdin(parsed, lines, flags)
    binding, partials = bind.choose(op, positionals, flags)
    if binding is None:
        raise no_binding(op, partials, positionals, flags)
    return binding


def no_binding(op, partials, positionals, flags=None):
    problem = cli_help.misfit(op, positionals, flags or {})  # `k wants an int, got a handle …`
    if problem:
        sigs = " | ".join(op.usage_line(ov) for ov in op.overloads[:4])
        return TorchshError("bad_argument", problem, "usage: torch " + sigs)
    if partials:
        best = max(partials, key=lambda b: b.score)
        names = ", ".join(a.name for a in best.missing)
        return TorchshError("missing_argument", "missing %s" % names, op.usage())
    got = " ".join(repr(t) for t in positionals) or "nothing"
    if len(op.overloads) > 1:
        sigs = " | ".join(op.usage_line(ov) for ov in op.overloads[:4])
        return TorchshError("usage", "arguments (%s) fit no signature" % got, "usage: torch " + sigs)
    return TorchshError("usage", "arguments (%s) do not fit" % got, op.usage())


def convert_all(ctx, binding):
    out = {}
    for a in binding.overload.args:
        if a.name not in binding.values:
            continue
        tok = binding.values[a.name]
        if isinstance(tok, list):
            item = {"tensors": "tensor", "handles": "handle", "modules": "module"}.get(a.kind)
            out[a.name] = [kinds.convert(item, t, ctx) for t in tok] if item else [t.text for t in tok]
        elif a.kind == "argv":
            out[a.name] = list(tok.value)
        else:
            out[a.name] = kinds.convert(a.kind, tok, ctx)
    return out


def invoke(ctx, op, binding, globals_=None, warned=None):
    """Run one bound op: under the tensor lock (unless lock-free), with the caller's grad mode.

    The first line of each distinct Python warning the op raised is appended to `warned`.
    """
    globals_ = globals_ or {}
    lockfree = op.extra.get("lockfree")
    lock = contextlib.nullcontext() if lockfree else ctx.app.tensor_lock(op.name)
    with lock, _warnings_to(None if lockfree else warned):
        values = convert_all(ctx, binding)
        guards.check(op.name, values)  # inputs on which PyTorch never returns
        with _grad_mode(ctx, globals_):
            try:
                budget = getattr(ctx.app, "memory", None)  # out_of_memory before allocating (torchsh.memory)
                if op.verb:
                    if budget is not None:
                        budget.admit_verb(op, ctx, values)
                    return op.call(ctx, **values)
                args, kwargs = _call_args(op, binding.overload, values, ctx)
                if budget is not None:
                    budget.admit(op, binding.overload, args, kwargs)
                return op.call(*args, **kwargs)
            except TorchshError:
                raise
            except MemoryError as e:
                raise memory.allocation_failure(e) from None
            except (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError, AssertionError,
                    ArithmeticError) as e:
                if isinstance(e, (AssertionError, ArithmeticError)) and not raised_by_torch(e):
                    raise  # our own assert or arithmetic failed: a bug, for run_cli's catch-all
                oom = memory.allocation_failure(e)  # PyTorch's allocator error, a CUDA OOM
                if oom is not None:
                    raise oom from None
                err = _explain(from_torch_exception(e), values)
                usage = "usage: torch " + op.usage_line(binding.overload)  # the form that ran
                err.hint = "%s; %s" % (err.hint, usage) if err.hint else usage
                raise err from None


_TRIGGERED = re.compile(r"\s*\(Triggered internally at [^)]*\)?\s*$")  # where in ATen's C++: noise to a user


@contextlib.contextmanager
def _warnings_to(warned):
    """Record the warnings raised meanwhile, every one (not once per code location, Python's default).

    Only under the tensor lock: catch_warnings swaps process-wide state, so two threads must never
    be inside it at once. Warnings of an op that fails are dropped: the failure is the one line.
    """
    if warned is None:
        yield
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    for w in caught:
        line = _TRIGGERED.sub("", str(w.message).strip().split("\n")[0])
        if line and line not in warned:
            warned.append(line)


def _explain(err, values):
    """Say which shapes clashed: PyTorch's broadcast message names sizes, not the tensors' shapes."""
    if err.code == "shape_mismatch" and "must match the size" in err.message:
        shapes = [list(v.shape) for v in values.values() if isinstance(v, torch.Tensor)]
        if len(shapes) >= 2:
            pairs = " and ".join(_shape_text(s) for s in shapes)
            err.hint = "PyTorch: %s" % err.message
            err.message = "shapes %s are not broadcastable" % pairs
    return err


def _shape_text(shape):
    return "[%s]" % ",".join(str(n) for n in shape)


def _grad_mode(ctx, globals_):
    if globals_.get("inference_mode") or ctx.inference_mode:
        return torch.inference_mode()
    if globals_.get("no_grad") or ctx.no_grad:
        return torch.no_grad()
    return contextlib.nullcontext()


@functools.lru_cache(maxsize=None)
def _python_params(fn):
    """Parameter names of a Python-level function in order; None for builtins (ATen ops)."""
    if not inspect.isfunction(fn):
        return None
    params = inspect.signature(fn).parameters.values()
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return None  # einsum(*args), atleast_1d(*tensors): typed by ATen, whose order is the call's
    return [p.name for p in params]


def _call_args(op, overload, values, ctx):
    """Positional while the schema order is unbroken, keywords after; *tensors splatted."""
    args, kwargs, positional = [], {}, True
    names = _python_params(op.call)
    for i, a in enumerate(overload.args):
        if names is not None and a.name in names and names.index(a.name) != i:
            positional = False  # the table left out a parameter (F.mse_loss's size_average): keywords from here
        if a.name not in values:
            positional = False
            continue
        v = values[a.name]
        if a.type_text == "*Tensor":
            args.extend(v)
        elif positional and not a.keyword_only:
            args.append(v)
        else:
            kwargs[a.name] = v
    if op.factory and "device" not in values and ctx.device:
        kwargs["device"] = torch.device(ctx.device)
    return args, kwargs
