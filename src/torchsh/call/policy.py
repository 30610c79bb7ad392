"""The caller's policy: which commands a caller that runs them for someone it trusts less admits.

`torch mcp --read_only --allow P --deny P` sends it with every command (protocol.H_POLICY: JSON
{"read_only": bool, "allow": [pattern…], "deny": [pattern…]}); the CLI face checks the resolved op before
anything runs, and again for each command an op runs inside itself (sweep's --model, nn sequential's layer
specs, bench's op: call/nested.py, cli/bench.py). A pattern is fnmatch's, on the op's dotted name or the words
users type (`fit`, `nn.save`, `lm.*`, `job.*`, `nn save`).

The admitted set: every command, or with read_only the read-only ones (OpSpec.read_only), or with allow and no
read_only none; plus each allow's matches; less each deny's matches (deny wins). A read-only command admitted
as such still writes no file: the output-path flags it has (`value --out`, `plot --png`) are refused.
"""
import fnmatch
import json
from dataclasses import dataclass

from torchsh.errors import TorchshError

MAX_PATTERNS = 256      # per list: a policy is a few words a person typed, not data
MAX_PATTERN_CHARS = 200
_WRITES_FILES = ("out_path", "out_dir_path")  # argument kinds whose value names a file or folder the op writes


@dataclass(frozen=True)
class Policy:
    read_only: bool = False
    allow: tuple = ()
    deny: tuple = ()


def from_header(value):
    """The Policy an H_POLICY header value says, or None when there is none; bad_request when malformed."""
    if value is None:
        return None
    try:
        data = json.loads(value)
    except ValueError as e:
        raise _malformed("not JSON (%s)" % e)
    if not isinstance(data, dict) or set(data) - {"read_only", "allow", "deny"}:
        raise _malformed("not an object of read_only, allow and deny")
    read_only = data.get("read_only", False)
    if not isinstance(read_only, bool):
        raise _malformed("read_only is not true or false")
    return Policy(read_only, _patterns(data, "allow"), _patterns(data, "deny"))


def _patterns(data, key):
    value = data.get(key) or []
    if not isinstance(value, list) or not all(isinstance(p, str) and 0 < len(p) <= MAX_PATTERN_CHARS for p in value):
        raise _malformed("%s is not a list of patterns (strings of 1 to %d characters)" % (key, MAX_PATTERN_CHARS))
    if len(value) > MAX_PATTERNS:
        raise _malformed("%s has %d patterns, over %d" % (key, len(value), MAX_PATTERNS))
    return tuple(value)


def _malformed(why):
    return TorchshError("bad_request", "the %s header is %s" % ("torchsh-policy", why),
                        'send {"read_only": true|false, "allow": ["PATTERN", …], "deny": ["PATTERN", …]}')


def matches(op, pattern):
    """Whether pattern names op: its dotted name (`nn.save`) or the words users type (`nn save`)."""
    return fnmatch.fnmatchcase(op.name, pattern) or fnmatch.fnmatchcase(op.display_name, pattern)


def admits(policy, op):
    """Whether the policy admits op at all (None: no policy, everything)."""
    if policy is None:
        return True
    if any(matches(op, p) for p in policy.deny):
        return False
    base = op.read_only if policy.read_only else not policy.allow
    return base or any(matches(op, p) for p in policy.allow)


def check(policy, op, given=()):
    """not_allowed unless the policy admits op with these argument names given; nothing has run yet."""
    if policy is None:
        return
    name = op.display_name
    if not admits(policy, op):
        raise TorchshError("not_allowed", "the caller's policy does not admit `%s`; nothing ran" % name,
                           _hint(policy, op), op=name)
    allowed = any(matches(op, p) for p in policy.allow)
    if policy.read_only and not allowed:
        flags = op.flags()
        writes = [g for g in given if g in flags and flags[g].kind in _WRITES_FILES]
        if writes:
            raise TorchshError("not_allowed", "the caller's policy is read-only: `%s --%s` writes a file; nothing ran"
                               % (name, writes[0]), "leave out --%s, or start torch mcp without --read_only or "
                               "with --allow '%s'" % (writes[0], op.name), op=name)


def _hint(policy, op):
    """Which flag of `torch mcp` to change for op to run."""
    denied = next((p for p in policy.deny if matches(op, p)), None)
    if denied is not None:
        return "it matches --deny '%s': start torch mcp without it" % denied
    if policy.read_only:
        return "`%s` changes state: start torch mcp without --read_only, or with --allow '%s'" % (op.display_name,
                                                                                                  op.name)
    return "start torch mcp with --allow '%s' (the --allow patterns name what runs)" % op.name
