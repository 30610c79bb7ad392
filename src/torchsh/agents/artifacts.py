"""The tools whose answer is a file or a comparison of files: runs (ls, diff, best of `fit --log` folders),
plot (a PNG the daemon draws into the server's private folder, served as torchsh://plot/N.png, never inline)
and history (the session as a plain PyTorch script, served as torchsh://history/N.py).
"""
import os
from typing import Literal

from torchsh.agents import bounded

_HEAD_LINES, _HEAD_WIDTH = 6, 120   # a replay script's first lines in the summary, each cut to a width


def register(server, link, store):
    artifacts = Artifacts(link, store)
    for name, fn, description in (
            ("runs", artifacts.runs, "Compare training runs (fit --log folders): ls DIR, diff A B, best DIR "
                                     "(by: the metric, lowest wins)."),
            ("plot", artifacts.plot, "Chart metrics of fit --log runs as a PNG resource link (y: keys; "
                                     "x: step or epoch)."),
            ("history", artifacts.history, "The session's work as a plain PyTorch script (resource link); "
                                           "target: only what made this handle."),
    ):
        server.add_tool(bounded.guarded(fn), name=name, description=description, structured_output=False)


class Artifacts:
    def __init__(self, link, store):
        self.link, self.store = link, store

    async def runs(self, action: Literal["ls", "diff", "best"], dirs: list[str], by: str | None = None):
        argv = ["runs", action] + list(dirs) + (["--by", by] if by else [])
        return bounded.outcome(await self.link.cli(argv), self.store)

    async def plot(self, sources: list[str], y: list[str] | None = None, x: str | None = None):
        n, path = self.store.reserve_file("plot")
        argv = ["plot"] + list(sources) + ["--png", path]
        for key in y or ():  # one --y per key: `--y a b` would read b as another source
            argv += ["--y", key]
        argv += ["--x", x] if x else []
        outcome = await self.link.cli(argv)
        if outcome.error is not None or outcome.exit:
            _remove(path)
            return bounded.outcome(outcome, self.store)
        self.store.adopt_file("plot", n, path)
        uri, size = self.store.uri("plot", n), os.path.getsize(path)
        summary = "plot of %s%s: %s (image/png, %d bytes)" % (
            ", ".join(sources), " (y: %s)" % ", ".join(y) if y else "", uri, size)
        return bounded.linked(summary, uri, "plot-%d.png" % n, "image/png", size)

    async def history(self, target: str | None = None):
        n, path = self.store.reserve_file("history")
        sidecar = path[:-len(".py")] + ".safetensors"  # tensors too big for literals: beside the script, ours
        argv = ["history", "--python", "--sidecar", sidecar] + (["--for", target] if target else [])
        outcome = await self.link.cli(argv)
        if outcome.error is not None or outcome.exit or outcome.truncated:
            return bounded.outcome(outcome, self.store)  # its error, or too_large with its hint
        script = outcome.stdout
        self.store.put_text("history", script, n)
        uri = self.store.uri("history", n)
        return bounded.linked(history_summary(script, uri, sidecar), uri, "history-%d.py" % n,
                              "text/x-python", len(script.encode()))


def history_summary(script, uri, sidecar):
    """One line on the script (its lines and where it is), then its first lines, each cut short."""
    lines = script.splitlines()
    head = [line if len(line) <= _HEAD_WIDTH else line[:_HEAD_WIDTH] + "…" for line in lines[:_HEAD_LINES]]
    extra = "; big tensors in %s" % sidecar if os.path.exists(sidecar) else ""
    return "replay script: %d lines, %s (text/x-python)%s; first lines:\n%s" % (
        len(lines), uri, extra, "\n".join(head))


def _remove(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
