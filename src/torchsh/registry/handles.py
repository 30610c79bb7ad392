"""Handle text: `kind://EEEnnnnn` where EEE is the daemon's epoch and nnnnn a base-36 counter.

Pure functions. The epoch makes a handle from an earlier daemon recognisably stale instead of
merely unknown; the counter keeps ids short and never reused within one daemon.
"""
import re
import secrets

EPOCH_LEN = 3
_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
SERIAL_LEN = 5  # base36(n) is zero-padded to this width, so a shorter id (`tensor://nope`) is malformed
HANDLE_RE = re.compile(r"^([a-z]+)://([0-9a-z]{%d})([0-9a-z]{%d,})$" % (EPOCH_LEN, SERIAL_LEN))
_LOOSE_RE = re.compile(r"^[a-z]+://")
_PAIRS = [a + b for a in _ALPHABET for b in _ALPHABET]  # base36 of 0..1295, two digits each


def new_epoch():
    return "".join(secrets.choice(_ALPHABET) for _ in range(EPOCH_LEN))


def base36(n, width=SERIAL_LEN):
    digits = []
    while n:  # two digits a turn: a new handle per op, so this runs once per request
        n, r = divmod(n, 1296)
        digits.append(_PAIRS[r])
    return "".join(reversed(digits)).lstrip("0").rjust(width, "0")


def format_handle(kind, epoch, serial):
    return "%s://%s%s" % (kind, epoch, base36(serial))


def looks_like_handle(text):
    """Is this one word meant as a handle (well formed or not)? "$m lr=0.1" is a phrase, not a handle."""
    return isinstance(text, str) and _LOOSE_RE.match(text) is not None and len(text.split()) == 1


def parse_handle(text):
    """Return (kind, epoch, id) or None when the text is not a well-formed handle."""
    m = HANDLE_RE.match(text.strip())
    return (m.group(1), m.group(2), m.group(3)) if m else None
