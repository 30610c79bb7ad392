"""Block forms and memory scopes: scope -- CMD, scope begin/end, keep, no_grad/enable_grad/inference_mode -- CMD.

A block form does not run CMD itself: it answers with an exec directive (an Exec result),
and the client runs CMD with a TORCHSH_* variable added. Every `torch` call inside CMD forwards
that variable, so the setting reaches exactly the commands CMD runs and ends when CMD exits, however
it exits: the shell's own process tree is the scope. For memory scopes the client then sends
`scope end ID`, which frees every handle made inside that was not passed to `torch keep`.

The client passes SIGTERM, SIGHUP and SIGINT on to CMD and still ends the scope. If the client is
killed outright (SIGKILL), the daemon ends the scope itself: the client holds the exec reply's connection
open while CMD runs, and its drop ends the scope (daemon/conn.Conn.hold); the scope also records its
owner's pid from SO_PEERCRED (registry/owners.py reaps it). CMD's later commands are refused (scope_ended).
"""
import logging

from torchsh.errors import TorchshError
from torchsh.results import Exec
from torchsh.verbs import verb

log = logging.getLogger("torchd")


def _command(command, op):
    if not command:
        raise TorchshError("usage", "%s needs a command after --" % op,
                           "e.g. torch %s -- bash -c 'torch mul $w $w | torch sum'" % op)
    return command


@verb("scope(*, Argv command) -> None", category="objects", lockfree=True, block=True,
      examples=("torch scope -- bash -c 'torch sum $(torch ones 3)'",))
def scope(ctx, command):
    """Run CMD; every handle made inside is freed when it exits (success or failure), except those kept.

    Scopes nest: the new scope lives inside the caller's (TORCHSH_SCOPE). Exits with CMD's status.
    """
    _command(command, "scope")
    # The client that asked waits for CMD and then ends the scope; if it dies first (its connection drops,
    # its process is gone), the daemon ends it, and CMD's later commands are told so (scope_ended).
    scope_id = ctx.registry.begin_scope(ctx.scope, owner_pid=ctx.peer_pid)
    if ctx.hold is not None:
        ctx.hold(lambda: _ended_with_client(ctx.registry, scope_id))
    return Exec(command, {"TORCHSH_SCOPE": scope_id}, ["scope", "end", scope_id])


def _ended_with_client(registry, scope_id):
    try:
        freed = registry.end_scope(scope_id, "its `torch scope` client went away")
    except TorchshError:
        return  # ended already: its client's `scope end` came first, as it should
    log.info("ended scope %s: its client's connection dropped; freed %d objects", scope_id, freed)


@verb("scope.begin() -> str", category="objects", lockfree=True,
      examples=("export TORCHSH_SCOPE=$(torch scope begin); torch zeros 2; torch scope end",))
def scope_begin(ctx):
    """Open a scope for interactive use and print its id: export TORCHSH_SCOPE=$(torch scope begin)."""
    return ctx.registry.begin_scope(ctx.scope)


@verb("scope.end(str? id=None) -> None", category="objects", lockfree=True,
      examples=("s=$(torch scope begin); TORCHSH_SCOPE=$s torch zeros 2; torch scope end $s",))
def scope_end(ctx, id=None):
    """Free every handle made in scope ID (default: $TORCHSH_SCOPE) and in scopes opened inside it. Silent."""
    scope_id = id or ctx.scope
    if scope_id is None:
        raise TorchshError("usage", "no scope to end: give an id or set TORCHSH_SCOPE",
                           "`torch scope begin` prints an id")
    ctx.registry.end_scope(str(scope_id).strip())


@verb("keep(Handle[] handles) -> None", category="objects", lockfree=True,
      examples=("torch scope -- bash -c 'torch keep $(torch zeros 2)'",))
def keep(ctx, handles):
    """Let handles outlive the current scope: they move to the enclosing scope, or to the global registry.

    Reads handles from stdin too. Handles that already live outside the current scope are left alone.
    """
    ctx.registry.keep(handles, ctx.scope)


@verb("no_grad(*, Argv command) -> None", category="autograd", lockfree=True, block=True,
      examples=("x=$(torch tensor '[1.0]' --requires_grad); "
                'torch no_grad -- bash -c "torch requires_grad \\$(torch mul $x 2)"',))
def no_grad(ctx, command):
    """Run CMD with no-grad for every torch call inside it: results record no graph and do not require grad.

    Same as exporting TORCHSH_NO_GRAD=1 for CMD; nests, and ends when CMD exits however it exits.
    """
    return Exec(_command(command, "no_grad"), {"TORCHSH_NO_GRAD": "1"})


@verb("enable_grad(*, Argv command) -> None", category="autograd", lockfree=True, block=True,
      examples=("x=$(torch tensor '[1.0]' --requires_grad); "
                'torch no_grad -- torch enable_grad -- bash -c "torch requires_grad \\$(torch mul $x 2)"',))
def enable_grad(ctx, command):
    """Run CMD with gradients recorded again, inside a no_grad block (PyTorch's torch.enable_grad)."""
    return Exec(_command(command, "enable_grad"), {"TORCHSH_NO_GRAD": "0"})


@verb("inference_mode(*, Argv command) -> None", category="autograd", lockfree=True, block=True,
      examples=("torch inference_mode -- bash -c 'torch value $(torch mul $(torch ones 2) 2)'",))
def inference_mode(ctx, command):
    """Run CMD in inference mode: like no_grad, and its results can never join a graph later."""
    return Exec(_command(command, "inference_mode"), {"TORCHSH_INFERENCE_MODE": "1"})
