"""One command's words run inside another op, which already holds the tensor lock: `nn sequential`'s
inline layer specs ('linear 2 8'), `torch sweep`'s --model and --opt templates. Resolved, bound and
converted as the CLI face does (cli/run.py), then called directly: no lock, no history entry of its own,
no handle made. Only ops that build objects from words are called this way (the callers check the kind).
"""
from torchsh import guards
from torchsh.call import bind, parse, policy
from torchsh.call.invoke import convert_all
from torchsh.errors import TorchshError


def resolve(ctx, argv):
    """(op, the words after its name) for argv, e.g. ["nn", "linear", "2", "8"]."""
    op, fixed, rest = ctx.table.resolve(argv)
    return op, rest


def call_words(ctx, op, words, what):
    """op called with words as its arguments; `what` names the words in a refusal (e.g. "--model"). The caller's
    policy (call/policy.py) admits it as it admits a command of its own."""
    policy.check(ctx.policy, op)
    parsed = parse.split_argv(op, words)
    positionals, flags = parse.named(parsed.positionals, parsed.flags, ctx.registry.names.lookup)
    binding, _ = bind.choose(op, positionals, flags)
    if binding is None:
        raise TorchshError("usage", "%s: cannot build %r" % (what, " ".join(words)), op.usage())
    policy.check(ctx.policy, op, binding.values)
    values = convert_all(ctx, binding)
    guards.check(op.name, values)  # as invoke does: `nn sequential 'lstm 4 4 --num_layers 1e9'` never returns
    return op.call(ctx, **values)
