"""A duration as `daemon status` and `daemon ttl` print it: 1h02m03s, 4m05s, 6s; never for None."""


def format_duration(seconds):
    if seconds is None:
        return "never"
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return "%dh%02dm%02ds" % (h, m, s) if h else ("%dm%02ds" % (m, s) if m else "%ds" % s)
