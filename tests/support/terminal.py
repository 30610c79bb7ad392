"""Commands run with a terminal (a pty) on stdin, stdout and stderr, Ctrl-C typed into it, and the lines
the terminal then shows. Use: `from support.terminal import run_in_pty, screen_lines` (tests/ is on sys.path); the
job tests and the distributed fit's share it."""
import os
import pty
import re
import select
import time


def run_in_pty(sh, script, send_when=None, send=b"\x03", timeout=120):
    """Run bash -c SCRIPT with a terminal on stdin, stdout and stderr; once send_when(output so far) is
    true, type `send` (Ctrl-C by default). Returns (output bytes, exit status)."""
    prelude = os.environ.get("TORCHSH_TEST_PRELUDE", "")
    pid, fd = pty.fork()
    if pid == 0:  # the child: a new session whose controlling terminal is the pty
        os.chdir(sh.folder)
        os.execve("/bin/bash", ["bash", "-c", (prelude + "\n" + script) if prelude else script], sh.env)
    out, sent, ok, deadline = bytearray(), send_when is None, False, time.monotonic() + timeout
    try:
        while (chunk := _read(fd, deadline)) is not None:
            out += chunk
            if not sent and send_when(bytes(out)):
                os.write(fd, send)
                sent = True
        ok = True
    finally:
        if not ok:  # stop the fit it runs (Ctrl-C), so nothing is left burning, then end it all
            os.write(fd, b"\x03")
            end = time.monotonic() + 30
            while _read(fd, end, fail=False) is not None:
                pass
            try:
                os.killpg(pid, 9)
            except ProcessLookupError:
                pass
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    return bytes(out), os.waitstatus_to_exitcode(status)


def _read(fd, deadline, fail=True):
    """The terminal's next output; None once every process holding it has exited."""
    ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
    if not ready:
        assert not fail, "the command did not finish in time"
        return None
    try:
        return os.read(fd, 65536) or None
    except OSError:  # EIO: the terminal's last process has exited
        return None


# The terminal echoes a typed Ctrl-C as `^C` wherever its cursor is, at a moment that races with the
# program's output: on the live progress line, or at the start of the line the program is about to clear
# and write its last line on. Tests read what the user is shown, without that echo.
CTRL_C_ECHO = "^C"
_CURSOR = re.compile(r"(\r|\x1b\[K)")


def screen_lines(out):
    """The lines a terminal shows for output bytes `out`: the echoed ^C dropped, then each line as drawn
    with its carriage returns (back to the line's start) and erase-to-end-of-line (ESC [ K) applied."""
    lines = []
    for raw in out.decode(errors="replace").replace(CTRL_C_ECHO, "").split("\n"):
        line, column = "", 0
        for piece in _CURSOR.split(raw):
            if piece == "\r":
                column = 0
            elif piece == "\x1b[K":
                line = line[:column]
            elif piece:
                line = line[:column] + piece + line[column + len(piece):]
                column += len(piece)
        lines.append(line)
    return lines
