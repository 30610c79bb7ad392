"""Shell integration verbs: `torch init bash|zsh` (the fast path shell function)."""
from torchsh.cli.render import Text
from torchsh.errors import bad_argument
from torchsh.verbs import verb


@verb("init(str shell) -> str", category="shell", lockfree=True)
def init(ctx, shell):
    """Print a `torch` shell function that runs commands with no process each: eval "$(torch init bash)".

    Turns on the daemon's loopback fast path (docs/fast-path.md) and prints the function for bash
    or zsh. Commands keep the CLI's output, stdin grammar, errors and exit codes.
    """
    from torchsh.daemon import fastpath
    if shell == "bash":
        from torchsh.shells.init_bash import script
    elif shell == "zsh":
        from torchsh.shells.init_zsh import script
    else:
        raise bad_argument("no fast path for shell %r" % shell, "use bash or zsh")
    fastpath.enable(ctx.app)
    return Text(script())


# -- Nushell module and TAB completion (shells/nushell.py, shells/completions.py, shells/complete.py) --
@verb("nu-module(*, str transport=\"socket\") -> str", category="shell", lockfree=True)
def nu_module(ctx, transport="socket"):
    """Print torch.nu, the Nushell module: `torch nu-module | save -f torch.nu`, then `use torch.nu`.

    --transport socket (default) talks to the daemon with nu's `http --unix-socket`; external runs
    the `torch` client per op, for a nu without --unix-socket.
    """
    from torchsh.shells import nushell
    if transport not in nushell.TRANSPORTS:
        raise bad_argument("unknown transport %r" % transport, "use socket or external")
    if transport == "socket":
        with open(nushell.MODULE) as f:
            return Text(f.read())   # the checked-in file (the staleness test keeps it equal to the table)
    return Text(nushell.module_text(ctx.table, transport))


@verb("completions(str shell) -> str", category="shell", lockfree=True)
def completions(ctx, shell):
    """Print the TAB completion script for bash, zsh or fish: eval "$(torch completions bash)"."""
    from torchsh.shells.completions import script
    return Text(script(shell))


@verb("__complete(*, Argv words) -> str", category="shell", lockfree=True)
def complete_words(ctx, words):
    """(For the completion scripts.) Candidates for the words after `torch`, the last one being typed."""
    from torchsh.registry.census import census_rows
    from torchsh.shells import complete
    return Text(complete.lines(complete.candidates(ctx.table, census_rows(ctx.registry), list(words))))
