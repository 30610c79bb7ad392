"""A block form (`no_grad -- CMD`) is a result value of the core (call.results.Exec), not an exception:
invoke returns it, and each face turns it into its own reply."""
import types

from torchsh.call import bind, parse
from torchsh.call.invoke import invoke
from torchsh.call.tokens import Token
from torchsh.context import Context
from torchsh.results import Exec
from torchsh.table.build import build_table

TABLE, _ = build_table()


def _run(argv):
    op, fixed, words = TABLE.resolve(argv)
    parsed = parse.split_argv(op, words, fixed)
    flags = dict(parsed.flags)
    if parsed.argv_rest is not None:
        flags["command"] = Token("argv", parsed.argv_rest, "--")
    binding, _ = bind.choose(op, parsed.positionals, flags)
    ctx = Context(types.SimpleNamespace(registry=None), "/", {}, True, None)
    return invoke(ctx, op, binding)


def test_no_grad_block_returns_the_command_and_its_setting():
    assert _run(["no_grad", "--", "bash", "-c", "torch ones 2"]) == \
        Exec(["bash", "-c", "torch ones 2"], {"TORCHSH_NO_GRAD": "1"})


def test_inference_mode_block_returns_an_exec_with_no_closing_command():
    result = _run(["inference_mode", "--", "true"])
    assert isinstance(result, Exec) and result.env == {"TORCHSH_INFERENCE_MODE": "1"} and not result.then_argv
