"""`torch context create|ls|use|rm|inspect`: the context store from the shell, run in the client process
(imported by client/main.py only for these words). They never need a daemon and never talk to a remote one,
except `create --host tls://…` without --fingerprint, which fetches the certificate to show it."""
import json
import os
import sys

from torchsh import paths, privatesocket, protocol
from torchsh.client.contexts import forwarder, store

USAGE = """usage: torch context ls [--json]
       torch context create NAME --host tls://HOST:PORT --token-file F [--fingerprint SHA256:…]
       torch context create NAME --host ssh://user@host[:port] [--socket REMOTE_SOCKET]
                            [--remote-torch PATH] [--ssh-config FILE]
       torch context use NAME          (default: the local daemon)
       torch context rm NAME…          (stops its forwarder)
       torch context inspect NAME      (JSON, token redacted)
A command runs on: --context NAME (first words), else $TORCHSH_CONTEXT, else $TORCHSH_SOCKET's daemon,
else the context `use` chose, else the local daemon ("default").
"""


def main(words):
    """words: the arguments after `context`, as str. Returns the exit status."""
    verb, rest = (words[0], words[1:]) if words else ("ls", [])
    try:
        if verb in ("-h", "--help", "help"):
            sys.stdout.write(USAGE)
            return 0
        handler = {"ls": ls, "list": ls, "create": create, "use": use, "rm": rm, "remove": rm,
                   "inspect": inspect}.get(verb)
        if handler is None:
            raise store.ContextError("usage", "no context command %r" % verb, "torch context --help")
        return handler(rest) or 0
    except store.ContextError as e:
        sys.stderr.write("torch: context %s: %s; %s [%s]\n" % (verb, e.message, e.hint, e.code))
        return protocol.exit_status(e.code)


def _flags(words, names, nargs_min=0, nargs_max=None):
    """Positional words and {flag: value} for --flag V / --flag=V; unknown flags are usage errors."""
    pos, flags, i = [], {}, 0
    while i < len(words):
        w = words[i]
        if w.startswith("--"):
            key, eq, value = w[2:].partition("=")
            if key not in names:
                raise store.ContextError("unknown_flag", "no flag --%s" % key, "torch context --help")
            if names[key] is bool:
                flags[key] = True
            elif eq:
                flags[key] = value
            elif i + 1 < len(words):
                flags[key], i = words[i + 1], i + 1
            else:
                raise store.ContextError("missing_argument", "--%s needs a value" % key, "torch context --help")
        else:
            pos.append(w)
        i += 1
    if len(pos) < nargs_min or (nargs_max is not None and len(pos) > nargs_max):
        raise store.ContextError("usage", "wrong number of arguments", USAGE.split("\n")[0])
    return pos, flags


def _selected():
    env = os.environ.get("TORCHSH_CONTEXT")
    if env:
        return env
    if os.environ.get("TORCHSH_SOCKET"):
        return store.DEFAULT
    return store.current()


def ls(words):
    _, flags = _flags(words, {"json": bool}, 0, 0)
    current = _selected()
    rows = [{"name": store.DEFAULT, "host": "unix://" + paths.socket_path(), "current": current == "default"}]
    for name in store.names():
        try:
            host = store.load(name).get("host", "?")
        except store.ContextError as e:
            host = "(unreadable: %s)" % e.message
        rows.append({"name": name, "host": host, "current": current == name})
    if flags.get("json"):
        sys.stdout.write(json.dumps(rows) + "\n")
        return 0
    width = max(len(r["name"]) for r in rows)
    sys.stdout.write("  %-*s  %s\n" % (width, "NAME", "HOST"))
    for r in rows:
        sys.stdout.write("%s %-*s  %s\n" % ("*" if r["current"] else " ", width, r["name"], r["host"]))
    return 0


def create(words):
    pos, flags = _flags(words, {"host": str, "fingerprint": str, "token-file": str, "socket": str,
                                "remote-torch": str, "ssh-config": str}, 1, 1)
    name = store.check_name(pos[0])
    host = flags.get("host") or ""
    if name in store.names():
        raise store.ContextError("usage", "context %s exists" % name, "`torch context rm %s` first" % name)
    if host.startswith("ssh://"):
        if "fingerprint" in flags or "token-file" in flags:
            raise store.ContextError("usage", "--fingerprint and --token-file are for tls:// contexts",
                                        "ssh checks the host with its own known_hosts")
        # remote-torch: the remote's `torch` when it is not on the login's PATH (a venv); ssh-config: ssh -F
        record = {"name": name, "host": host, "socket": flags.get("socket", ""),
                  "remote_torch": flags.get("remote-torch", ""), "ssh_config": _absolute(flags.get("ssh-config"))}
    elif host.startswith("tls://"):
        record = _tls_record(name, host, flags)
    else:
        raise store.ContextError("usage", "--host %r is not tls://HOST:PORT or ssh://user@host[:port]" % host,
                                    "e.g. torch context create gpu1 --host ssh://me@gpu1")
    store.save(record)
    sys.stdout.write(name + "\n")
    return 0


def _absolute(path):
    return os.path.abspath(os.path.expanduser(path)) if path else ""  # the record is read from any cwd


def _tls_record(name, host, flags):
    from torchsh.link import tls
    for ssh_only in ("socket", "remote-torch", "ssh-config"):
        if ssh_only in flags:
            raise store.ContextError("usage", "--%s is for ssh:// contexts" % ssh_only,
                                        "a TLS daemon is reached at its port")
    try:
        tls.split_host(host)
    except ValueError as e:
        raise store.ContextError("bad_argument", str(e), "e.g. tls://gpu1.lan:7443") from None
    if "token-file" not in flags:
        raise store.ContextError("missing_argument", "a tls:// context needs the daemon's token",
                                    "--token-file F: a copy of torchd.tls.token beside the daemon's socket")
    try:
        with open(flags["token-file"], "rb") as f:
            token = f.read().decode().strip()
    except (OSError, UnicodeDecodeError) as e:
        raise store.ContextError("file_error", "cannot read %s: %s" % (flags["token-file"], e), "check the path")
    fingerprint = flags.get("fingerprint") or _confirm_fingerprint(host)
    try:
        tls.parse_fingerprint(fingerprint)
    except ValueError as e:
        raise store.ContextError("bad_argument", str(e), "copy the line torchd printed at its start") from None
    return {"name": name, "host": host, "fingerprint": fingerprint, "token": token}


def _confirm_fingerprint(host):
    """No --fingerprint: show the certificate's and ask once, on a terminal only."""
    from torchsh.link import tls
    if not (os.isatty(0) and os.isatty(2)):
        raise store.ContextError("missing_argument", "no --fingerprint, and no terminal to confirm one on",
                                    "pass --fingerprint SHA256:… (torchd prints it when it starts listening)")
    try:
        seen = tls.fetch_fingerprint(host)
    except tls.TLSRefused as e:
        raise store.ContextError(e.code, e.message, e.hint) from None
    sys.stderr.write("the daemon at %s shows certificate %s\ncompare it with the line torchd printed; "
                     "pin it? [y/N] " % (host, seen))
    sys.stderr.flush()
    if sys.stdin.readline().strip().lower() not in ("y", "yes"):
        raise store.ContextError("usage", "not confirmed; nothing was saved", "pass --fingerprint to pin one")
    return seen


def use(words):
    pos, _ = _flags(words, {}, 1, 1)
    name = pos[0]
    if name != store.DEFAULT:
        store.load(name)  # unknown_context unless it exists
    store.set_current(name)
    sys.stdout.write(name + "\n")
    if os.environ.get("TORCHSH_CONTEXT") and os.environ["TORCHSH_CONTEXT"] != name:
        sys.stderr.write("torch: context use: warning: TORCHSH_CONTEXT=%s overrides it in this shell\n"
                         % os.environ["TORCHSH_CONTEXT"])
    return 0


def rm(words):
    pos, _ = _flags(words, {}, 1)
    for name in pos:
        store.load(name)  # unknown_context (and the default's refusal) before anything is removed
    for name in pos:
        local = paths.context_socket(name)
        if store.scheme(store.load(name)) == "ssh":
            from torchsh.client.contexts import ssh  # helper C's module: it ends its OpenSSH forwarder
            ssh.stop_forwarder(local)
        else:
            forwarder.stop(local)
        for path in (local, paths.sibling(local, ".lock")):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        store.remove(name)
        if store.current() == name:
            store.set_current(store.DEFAULT)
        sys.stdout.write(name + "\n")
    return 0


def inspect(words):
    pos, _ = _flags(words, {}, 1, 1)
    name = pos[0]
    if name == store.DEFAULT:
        record = {"name": name, "host": "unix://" + paths.socket_path()}
    else:
        record = dict(store.load(name))
        if record.get("token"):
            record["token"] = "(redacted)"
        local = paths.context_socket(name)
        record["local_socket"] = local
        record["forwarder_running"] = privatesocket.probe(local)
    record["current"] = _selected() == name
    sys.stdout.write(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return 0
