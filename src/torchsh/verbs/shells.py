"""Shell integration verbs: `torch init bash|zsh` (the fast path shell function)."""
import os
import sys

from torchsh import fileio
from torchsh.call import replies
from torchsh.errors import bad_argument
from torchsh.results import NeedEnv, Table, Text
from torchsh.verbs import verb

CALLERS_HOME = ("HOME", "XDG_CONFIG_HOME")  # where the caller's Nushell keeps its scripts


@verb("init(str shell) -> str", category="shell", lockfree=True,
      examples=("torch init bash > /dev/null",), read_only=True)
def init(ctx, shell):
    """Print a `torch` shell function that runs commands with no process each: eval "$(torch init bash)".

    Turns on the daemon's loopback fast path (docs/fast-path.md) and prints the function for bash
    or zsh. Commands keep the CLI's output, stdin grammar, errors and exit codes.
    """
    if shell == "bash":
        from torchsh.shells.init_bash import script
    elif shell == "zsh":
        from torchsh.shells.init_zsh import script
    else:
        hint = "Nushell needs none: `torch nu-module --install`, then `use torch.nu`" if shell == "nu" else None
        raise bad_argument("no fast path for shell %r" % shell, hint or "use bash or zsh")
    ctx.app.enable_fastpath()
    return Text(script())


# -- Nushell module and TAB completion (shells/nushell.py, shells/completions.py, shells/complete.py) --
@verb("nu-module(*, str transport=\"socket\", bool install=False) -> str", category="shell", lockfree=True,
      examples=("torch nu-module > torch.nu",))
def nu_module(ctx, transport="socket", install=False):
    """Print torch.nu, the Nushell module; --install writes it into Nushell's scripts folder instead.

    --install creates ($nu.default-config-dir)/scripts (on NU_LIB_DIRS by default) if needed, writes
    torch.nu there and prints the line for config.nu: `use torch.nu`. --transport socket (default)
    talks to the daemon with nu's `http --unix-socket`; external runs the `torch` client per op.
    """
    from torchsh.shells import nushell
    if transport not in nushell.TRANSPORTS:
        raise bad_argument("unknown transport %r" % transport, "use socket or external")
    if transport == "socket":
        with open(nushell.MODULE) as f:
            text = f.read()   # the checked-in file (the staleness test keeps it equal to the table)
    else:
        text = nushell.module_text(ctx.table, transport)
    if not install:
        return Text(text)
    if not all(name in ctx.env for name in CALLERS_HOME) and replies.needed(ctx, "env", "nu-module"):
        raise NeedEnv(CALLERS_HOME)  # the caller's own folders, not the daemon's: it resends with them
    path = os.path.join(nu_config_dir(ctx.env if ctx.env.get("HOME") else os.environ), "scripts", "torch.nu")
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    except OSError as e:
        raise fileio.file_error(os.path.dirname(path), "create", e) from None
    fileio.atomic_write(path, lambda tmp: _write_text(tmp, text))
    return Text("use torch.nu  # %s\n" % path)


def nu_config_dir(env):
    """Nushell's $nu.default-config-dir for a caller's environment (a caller that carries the env reply sends
    HOME and XDG_CONFIG_HOME when asked; other callers get the daemon's own): $XDG_CONFIG_HOME/nushell, else
    the platform's."""
    xdg = env.get("XDG_CONFIG_HOME")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "nushell")
    home = env.get("HOME") or os.path.expanduser("~")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Application Support", "nushell")
    return os.path.join(home, ".config", "nushell")


def _write_text(path, text):
    with open(path, "w") as f:
        f.write(text)


@verb("completions(str shell) -> str", category="shell", lockfree=True,
      examples=("torch completions bash > /dev/null",), read_only=True)
def completions(ctx, shell):
    """Print the TAB completion script for bash, zsh or fish: eval "$(torch completions bash)"."""
    from torchsh.shells.completions import script
    return Text(script(shell))


@verb("__complete(*, Argv? words=None, str? line=None) -> str", category="shell", lockfree=True,
      examples=("torch __complete -- lina", "torch __complete --line 'torch forward '"), read_only=True)
def complete_words(ctx, words=None, line=None):
    """(For the completion scripts and torch.nu.) Candidates for the words after `torch`, the last one
    being typed: `candidate<TAB>description` lines. --line: a Nushell line up to the cursor (torch.nu's
    completer), answered as {value, description} rows; none (null) for a file name or no torch call."""
    from torchsh.registry.census import census_rows
    from torchsh.shells import complete
    cwd = ctx.cwd if ctx.context_name == "default" else None  # a remote caller's files are not this host's
    if line is None:
        return Text(complete.lines(complete.candidates(ctx.table, census_rows(ctx.registry), list(words or ()), cwd)))
    words = complete.nu_words(line)
    found = complete.candidates(ctx.table, census_rows(ctx.registry), words, cwd) if words is not None else []
    if found[:1] == [(complete.FILES, "")]:
        return None  # nu completes file names when a completer gives nothing (null)
    return Table([{"value": c, "description": " ".join(str(d).split())} for c, d in found], ["value", "description"])
