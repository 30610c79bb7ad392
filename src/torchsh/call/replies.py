"""Which replies a caller carries out, and what it gets when it lacks one a command needs (protocol.REPLIES).

A caller lists the replies it carries out in its request (protocol.H_REPLIES: the `torch` client all of them,
the bash and zsh functions stdin, exec, follow and handover, torch.nu exec, follow and handover; a bare JSON
API call none). A command needs a reply by declaration (a verb's `replies=`: fit follows its job, cp copies,
daemon stop awaits its exit, a block form execs) or as it finds out, before anything ran (stdin lines, a
caller's file on a remote context, a variable of the caller's). Both ask `needed`:

- the caller carries the reply: it gets it;
- else, when the caller carries `handover`: Handover is raised before anything runs, and the caller runs the
  command with the real `torch` client (which carries every reply);
- else the row's fallback: DAEMON (the daemon carries the reply out itself and answers once, at the end:
  a followed job), SKIP (the output alone: a stop not waited for), or REFUSE (needs_client, nothing ran).

So a new reply can never break an older or smaller caller: it is handed over, carried out or refused.
"""
from torchsh import protocol
from torchsh.errors import TorchshError

NONE = frozenset()


def check(ctx, op):
    """Before an op runs: every reply it declares is carried, handed over or has a fallback (else refused)."""
    for name in op.replies:
        needed(ctx, name, op.display_name)


def needed(ctx, name, op_name=None, refusal=None):
    """True when the caller carries reply `name`; False when the daemon falls back (DAEMON, SKIP); raises
    Handover (the caller carries handover) or the refusal (default: needs_client) otherwise."""
    if name in ctx.replies:
        return True
    from torchsh.results import Handover  # results imports torch: only on this rare path
    if "handover" in ctx.replies:
        raise Handover(op_name, name)
    row = protocol.REPLY_ROWS[name]
    if row.fallback != protocol.REFUSE:
        return False
    raise refusal or TorchshError(
        "needs_client", "this command needs the %s reply (%s), which this caller does not carry out; nothing ran"
        % (name, row.meaning.split(";")[0]), _hint(name), op=op_name)


def _hint(name):
    if name == "exec":
        return "run it with the `torch` client, or (JSON API) send \"exec\": true and run the block yourself"
    return "run it with the `torch` client, or list %r in the %s request header" % (name, protocol.H_REPLIES)
