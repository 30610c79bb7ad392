"""Request bodies against the memory budget: a body is held whole in memory before its handler runs, so a
big one is admitted (or refused) when its head arrives, not after gigabytes were read that could not be
kept. The loop thread alone calls this (daemon/server.py): no lock."""
from torchsh import memory, protocol
from torchsh.daemon import http
from torchsh.daemon.conn import error_bytes

BUDGETED_BODY = 1 << 20  # smaller bodies are not counted: the connection limit bounds them


class BodyBudget:
    def __init__(self, app):
        self.app = app
        self.arriving = 0  # bytes of the admitted bodies being read now

    def admit(self, conn, max_body):
        """Reserve the body conn's head announces (once); the reply bytes of a refusal (out_of_memory) when
        what the daemon uses, plus the bodies arriving, plus this one would exceed the budget."""
        if conn.reserved:
            return None
        try:
            length = http.announced_body(conn.buf, max_body)
        except http.HTTPError:
            return None  # the server's parse refuses it at the next read
        budget = getattr(self.app, "memory", None)
        if length is None or length < BUDGETED_BODY or budget is None or budget.limit is None:
            return None
        in_use = memory.rss_bytes() + self.arriving
        if in_use + length > budget.limit:
            budget.refused += 1
            err = memory.over_budget(length, in_use, budget.limit, budget.rule)
            message = err.message.replace("output of", "a request body of", 1)
            json_body = not conn.buf.startswith(b"POST %s " % protocol.CLI_PATH.encode())
            return error_bytes(err.code, message, err.hint, json_body=json_body)
        conn.reserved = length
        self.arriving += length
        return None

    def release(self, conn):
        """The body arrived whole (its handler's memory is RSS now), or its connection went."""
        self.arriving -= conn.reserved
        conn.reserved = 0
