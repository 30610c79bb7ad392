"""The context store: one JSON record per context in ${XDG_CONFIG_HOME:-~/.config}/torchsh/contexts/NAME
(folder 0700, file 0600, trust-checked like the socket folder), the current context's name in
…/torchsh/current-context (one line; absent means "default"), and ensure_forwarder, which makes a
context's local socket (paths.context_socket) answer.

Runs in the client process on the rare paths only (`torch context …`, a context socket that does not
answer), never in the daemon. A record holds: name, host (tls://HOST:PORT or ssh://user@host[:port]),
socket (the remote daemon's socket, ssh only; "" = its default), fingerprint and token (tls only).
"""
import json
import os
import re

from torchsh import paths, trust
from torchsh.client.contexts.private import ContextError, private_dir, read_private, refuse_if, write_private

DEFAULT = "default"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


def config_dir():
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "torchsh")


def store_dir():
    return os.path.join(config_dir(), "contexts")


def current_file():
    return os.path.join(config_dir(), "current-context")


def check_name(name):
    if name == DEFAULT or not NAME_RE.match(name or ""):
        raise ContextError("bad_argument", "%r is not a context name" % name if name != DEFAULT else
                           "\"default\" is the local daemon; it cannot be created or removed",
                           "names are letters, digits, _ . - (up to 63), e.g. gpu1")
    return name


def load(name):
    """The record of context NAME (a dict); unknown_context when there is none."""
    check_name(name)
    folder = store_dir()
    try:
        refuse_if(trust.untrusted(folder, trust.S_IFDIR))
        data = read_private(os.path.join(folder, name))
    except FileNotFoundError:
        raise ContextError("unknown_context", "no context named %s" % name,
                           "`torch context ls` lists them; `torch context create %s --host …` makes one" % name)
    try:
        record = json.loads(data)
    except ValueError as e:
        raise ContextError("bad_argument", "the record %s is not JSON: %s" % (os.path.join(folder, name), e),
                           "remove it with `torch context rm %s` and create it again" % name)
    return record


def save(record):
    private_dir(config_dir())
    private_dir(store_dir())
    write_private(os.path.join(store_dir(), check_name(record["name"])),
                   (json.dumps(record, indent=1, sort_keys=True) + "\n").encode())


def names():
    """Every stored context's name, sorted (not "default")."""
    folder = store_dir()
    try:
        refuse_if(trust.untrusted(folder, trust.S_IFDIR))
        found = os.listdir(folder)
    except FileNotFoundError:
        return []
    return sorted(n for n in found if NAME_RE.match(n) and not n.endswith(".tmp"))


def remove(name):
    os.unlink(os.path.join(store_dir(), check_name(name)))


def current():
    """The current context's name as the client reads it (current-context file), "default" without one."""
    try:
        name = read_private(current_file()).decode(errors="replace").strip()
    except FileNotFoundError:
        return DEFAULT
    return name or DEFAULT


def set_current(name):
    """`context use NAME`; "default" removes the file, so a shell's common path costs one failed open."""
    if name == DEFAULT:
        try:
            os.unlink(current_file())
        except FileNotFoundError:
            pass
        return
    private_dir(config_dir())
    write_private(current_file(), (name + "\n").encode())


def scheme(record):
    return record["host"].split("://", 1)[0]


def ensure_forwarder(name):
    """Make paths.context_socket(NAME) answer, starting the context's forwarder when none does, and
    return that path. tls: our forwarder (forwarder.py); ssh: torchsh.client.contexts.ssh.ensure_forwarder
    (OpenSSH's own forwarding of the remote daemon's socket, which starts the remote daemon when needed)."""
    record = load(name)
    local = paths.context_socket(name)
    kind = scheme(record)
    if kind == "tls":
        from torchsh.client.contexts import forwarder
        forwarder.ensure(record, local)
    elif kind == "ssh":
        from torchsh.client.contexts import ssh  # helper C's module
        ssh.ensure_forwarder(record, local)
    else:
        raise ContextError("bad_argument", "context %s has host %s: not tls:// or ssh://" % (name, record["host"]),
                           "create it again with --host tls://HOST:PORT or ssh://user@host")
    return local


def ensure_fastdoor(name, local):
    """The bash fast path's door to context NAME (client/contexts/fastdoor.py), whose forwarder answers on
    `local`: an ssh context's is a process of its own, started here unless it runs; a TLS forwarder has its own."""
    if scheme(load(name)) == "ssh":
        from torchsh.client.contexts import fastdoor
        fastdoor.ensure(local)


def connect_starting_forwarder(name, local):
    """The client's rare path: start context NAME's forwarder, then a trusted connection to `local`
    (wire.connect); one error line when either fails."""
    from torchsh.client import wire
    from torchsh.errors import TorchshError  # what ssh.py raises
    try:
        ensure_forwarder(name)
    except (ContextError, TorchshError) as e:
        wire.fail(e.code, "context %s: %s" % (name, e.message), e.hint)
    try:
        return wire.connect(local)
    except OSError as e:
        wire.fail("daemon_unavailable", "context %s: its forwarder on %s does not answer: %s"
                  % (name, local, e.strerror), "see the forwarder's log beside it")
