"""The CLI grammar, run inside the daemon: argv -> op, bound arguments -> result -> text."""
