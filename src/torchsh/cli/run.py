"""POST /v1/cli, the CLI face: argv in, (stdout, stderr, exit status) out, or another reply (protocol.REPLIES).

The order of work: resolve the op name, split flags, check that the caller carries the replies the op
declares (call/replies.py: else a handover before anything runs), bind an overload (asking for stdin
lines when tensor slots are missing), invoke it (call/), render its text. A reply besides output is a typed
result (results.py) the router writes (daemon/routes.py). Every failure becomes one line
`torch: OP: message; hint [code]` and its exit status.
"""
import contextlib
import logging
import traceback
from dataclasses import dataclass

import torch

from torchsh import memory, protocol, results
from torchsh.call import bind, parse, policy, replies, tokens, towire
from torchsh.call.invoke import invoke
from torchsh.call.misfit import no_binding
from torchsh.call.tokens import Token
from torchsh.cli import help as cli_help, render
from torchsh.context import Context
from torchsh.errors import TorchshError
from torchsh.registry import names
from torchsh.remote import staging
from torchsh.table.kinds import STDIN_TEXT_KINDS

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
    reply: object = None      # a reply besides output (results.py: NeedStdin, Exec, Follow, Copy, Await, …)
    downloads: list = None    # (stage id, the caller's path): files the op wrote for a remote caller (download)
    ctx: object = None        # the request's Context, for a Follow the daemon carries out itself (protocol.DAEMON)
    error: object = None      # the TorchshError a failure's stderr line is made from (protocol.H_ERROR)


def run_cli(app, request):
    ctx = Context(app, request["cwd"], request["env"], request["stdin_is_tty"], request["stdin"],
                  peer_pid=request.get("peer_pid"), stderr_is_tty=request.get("stderr_is_tty", False),
                  replies=request.get("replies", replies.NONE), hold=request.get("hold"))
    argv = request["argv"]
    op_name = argv[0][:60] if argv else None
    try:
        ctx.policy = policy.from_header(request.get("policy"))
        _check_word_sizes(argv)
        if argv[:1] == ["help"] and len(argv) > 1:  # `torch help OP` is `torch OP --help`
            argv = argv[1:] + ["--help"]
        if not argv or argv[0] in ("-h", "--help", "help"):
            return CliReply(stdout=cli_help.overview(app.table))
        if argv[0] in ("--version", "version"):
            return CliReply(stdout="torchsh %s (torch %s)\n" % (app.version, torch.__version__))
        op, fixed, words = app.table.resolve(argv)
        op_name = op.display_name
        with staging.command_files(ctx, op):
            reply = _run_op(ctx, op, fixed, words)
        if ctx.downloads:  # files the op wrote for a remote caller: the client fetches them (remote/staging.py)
            reply.stdout = staging.as_callers(ctx.app.staging, ctx.downloads, reply.stdout)
            reply.downloads = ctx.downloads
        return reply
    except results.Ask as ask:  # nothing ran: the caller carries it out (call/replies.py decided), or hands over
        ask.op = ask.op or op_name
        if isinstance(ask, results.Handover):
            error = TorchshError("needs_client", "needs the `torch` client (it carries out the %s reply); nothing ran"
                                 % ask.needs, op=ask.op)  # the same line as ask.line()
            return CliReply(stderr=ask.line() + "\n", exit=protocol.exit_status("needs_client"), reply=ask, error=error)
        return CliReply(reply=ask)
    except TorchshError as e:
        e.op = e.op or op_name
        names.say_given(e, argv + (ctx.stdin or []), app)
        return CliReply(stderr="" if e.code in protocol.SILENT else e.line() + "\n", exit=protocol.exit_status(e.code),
                        error=_untraced(e))
    except Exception as e:  # a bug in torchsh: keep the daemon alive, log the traceback
        oom = memory.allocation_failure(e)  # a MemoryError rendering a big reply is the budget's, not a bug
        if oom is not None:
            oom.op = op_name
            return CliReply(stderr=oom.line() + "\n", exit=protocol.exit_status(oom.code), error=_untraced(oom))
        log.error("internal error on %r\n%s", argv, traceback.format_exc())
        err = TorchshError("internal_error", "internal error", "the daemon log %s has the traceback" % app.log_path,
                           op=op_name)
        return CliReply(stderr=err.line() + "\n", exit=protocol.EXIT_INTERNAL, error=err)


def _untraced(err):
    """The error as data, without the traceback a raised one carries: its frames hold the op's arguments (a
    model refused by the memory budget), which would live on with the reply and keep freed memory taken."""
    return TorchshError(err.code, err.message, err.hint, op=err.op)


def _check_word_sizes(argv):
    for i, word in enumerate(argv):
        if len(word) > MAX_WORD_BYTES // 4 and len(word.encode(errors="surrogateescape")) > MAX_WORD_BYTES:
            raise TorchshError("too_large", "word %d of the command line is %d bytes, over the %d KiB limit"
                               % (i + 1, len(word.encode(errors="surrogateescape")), MAX_WORD_BYTES // 1024),
                               "put bulk data in a file and `torch load` it (or POST an .npy to /v1/tensors)")


def _check_split_lists(words):
    """`torch zeros [2, 3]`: the shell split the list at its spaces into `[2,` and `3]`, which no op reads.
    Said as what to type, before any slot reports the pieces as text. A block's command (after `--`) is its own."""
    words = words[:words.index("--")] if "--" in words else words
    for i, word in enumerate(words):
        if word[:1] != "[" or tokens.from_word(word).cls == "list":
            continue
        depth = 0
        for j in range(i, len(words)):
            depth += words[j].count("[") - words[j].count("]")
            if depth <= 0:
                if j > i:
                    joined = " ".join(words[i:j + 1])
                    raise TorchshError("usage", "the shell split the list %s into %d words" % (joined, j - i + 1),
                                       "quote the list: '%s'" % joined)
                break


def _run_op(ctx, op, fixed, words):
    _check_split_lists(words)
    parsed = parse.split_argv(op, words, fixed)
    if parsed.globals.get("help"):
        # the example trials run PyTorch (its RNG, warning filters, allocator: process-wide), so they wait
        # their turn like any tensor work; a lock-free verb's help has no trials and never waits
        lock = contextlib.nullcontext() if op.lockfree else ctx.app.tensor_lock(op.name + " --help")
        with lock:
            return CliReply(stdout=cli_help.op_help(op, _columns(ctx)))
    policy.check(ctx.policy, op)  # after --help (which changes nothing), before anything runs
    replies.check(ctx, op)
    ctx.naming(op, parsed.globals.get("name"), parsed.globals.get("ttl"))
    parsed.positionals, flags = parse.named(parsed.positionals, parsed.flags, ctx.registry.names.lookup)
    if parsed.argv_rest is not None:
        argv_arg = next((a for a in op.flags().values() if a.kind == "argv"), None)
        if argv_arg is None:
            raise TorchshError("usage", "%s takes no command after --" % op.name, op.usage())
        flags[argv_arg.name] = Token("argv", parsed.argv_rest, "--")
    binding = _bind_with_stdin(ctx, op, parsed, flags)
    policy.check(ctx.policy, op, binding.values)  # a read-only policy: no output-path flag (value --out)
    warned = []
    result = invoke(ctx, op, binding, parsed.globals, warned)
    warnings = "".join("torch: %s: %s\n" % (op.display_name, line) for line in ctx.said)
    warnings += "".join("torch: %s: warning: %s\n" % (op.display_name, w) for w in warned)
    if isinstance(result, results.Streams):  # a job's output once it ended (jobs/follow.py)
        return CliReply(stdout=result.stdout, stderr=result.stderr, exit=result.exit, error=result.error)
    if isinstance(result, (results.Exec, results.Follow, results.Copy, results.Await)):
        return _replied(ctx, op, result, warnings)
    wire = towire.to_wire(result, ctx)
    # rows that say how they compare (`runs diff`: 1 when the runs differ, as diff(1)) exit with that status
    return CliReply(stdout=render.cli_text(result, wire, parsed.globals.get("json", False)), stderr=warnings,
                    exit=getattr(result, "exit_status", 0))


def _columns(ctx):
    """The caller's terminal width (the client sends it when stdout is a terminal), else 80."""
    text = (ctx.env or {}).get("TORCHSH_COLUMNS", "")
    return int(text) if text.isdigit() and 0 < int(text) < 10000 else 80


def _replied(ctx, op, result, warnings):
    """A reply besides output the op answered with, once it ran: the caller carries it out, or the row's
    fallback applies (call/replies.py checked before the op ran that nothing else is left)."""
    if isinstance(result, results.Follow):
        if ctx.replies and "follow" in ctx.replies:
            return CliReply(stdout=result.stdout, stderr=warnings + result.stderr, reply=result)
        return CliReply(reply=result, ctx=ctx)  # DAEMON: the router follows the job itself (daemon/routes.py)
    if isinstance(result, results.Copy):
        return CliReply(stdout="".join(h + "\n" for h in result.handles), stderr=warnings, reply=result)
    if isinstance(result, results.Await):
        return CliReply(stdout=result.text, stderr=warnings, reply=result if "await" in ctx.replies else None)
    return CliReply(stderr=warnings, reply=result)  # Exec


def _bind_with_stdin(ctx, op, parsed, flags):
    """The binding to run; NeedStdin when it needs stdin lines the caller has not sent (it resends with them). `-` takes exactly one line each; without `-`, stdin fills the tensor slots the given words
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
        replies.needed(ctx, "stdin", op.display_name)
        raise results.NeedStdin(need)
    toks = [tokens.named(tokens.from_word(line), ctx.registry.names.lookup) for line in ctx.stdin if line.strip()]
    text = "\n".join(ctx.stdin) if any(a.kind in STDIN_TEXT_KINDS for a in open_.holes) else None
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
        replies.needed(ctx, "stdin", op.display_name)
        raise results.NeedStdin(need)
    lines = [line for line in ctx.stdin if line.strip()]
    if len(lines) < need:
        raise TorchshError("missing_argument", "expected %d handle(s) on stdin for `-`, got %d" % (need, len(lines)),
                           op.usage())
    positionals, flags = parse.named(*parse.put_stdin(parsed, lines, flags), ctx.registry.names.lookup)
    binding, partials = bind.choose(op, positionals, flags)
    if binding is None:
        raise no_binding(op, partials, positionals, flags)
    return binding


