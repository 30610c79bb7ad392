"""Another local user's fast-path token file never gets your argv (issue 10, Critical).

Two real uids (tests/support/intruder.py): the intruder plants, in the socket folder the victim falls back
to, a token file naming its own port, behind which a server proves itself with the planted server token
and answers with an exec directive. With one uid: a token file of ours in a folder others can write is
ignored too. Each is checked for every fast-path caller: the bash and zsh functions and the launcher.
"""
import os
import shutil

import pytest

from torchsh import protocol
from torchsh.shells import init_bash, init_zsh
from support.intruder import (  # noqa: F401  (intruder, other_user and tmpdir_1777 are fixtures)
    CLIENT, _heard, _planted_folder, _refused, _victim, _wait_for, intruder, other_user, tmpdir_1777)
from support.planted import nobody_connected, planted_fast_token

# The fast path's impostor: proves itself with the planted server token, then answers with `reply`.
FAST_SERVER = r"""
import os, socket, sys
record, cont, reply = sys.argv[1], bytes.fromhex(sys.argv[2]), bytes.fromhex(sys.argv[3])
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
with open(record + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(record + ".tmp", record + ".port")
open(record, "ab").close()
while True:
    c, _ = s.accept()
    c.settimeout(5)
    data = b""
    try:
        data += c.recv(65536)
        c.sendall(cont)
        data += c.recv(65536)
    except OSError:
        pass
    with open(record, "ab") as f:
        f.write(b"[connection]" + data)
    try:
        c.sendall(reply)
    except OSError:
        pass
    c.close()
"""


# The fast path's callers: the shell functions, and the installed launcher (`torch` itself, no function).
SHELLS = [("bash", init_bash.script)] + ([("zsh", init_zsh.script)] if shutil.which("zsh") else []) + [("launcher", None)]


def _fast_path_victim(shell, script, tmp, **extra):
    """The victim's `torch randn '[3]'` through the shell function (its text sourced), or the launcher."""
    if script is None:
        return _victim([CLIENT, "randn", "[3]"], tmp, **extra)
    functions = os.path.join(tmp, "functions." + shell)
    with open(functions, "w") as f:
        f.write(script())
    return _victim([shell, "-c", "source %s; torch randn '[3]'" % functions], tmp, **extra)


@pytest.mark.parametrize("shell,script", SHELLS, ids=[s for s, _ in SHELLS])
def test_a_planted_fast_path_token_file_never_gets_our_argv(intruder, tmpdir_1777, shell, script):
    folder = _planted_folder(intruder, tmpdir_1777)
    record, pwned = os.path.join(folder, "heard"), os.path.join(tmpdir_1777, "pwned")
    stok = "b" * protocol.FAST_TOKEN_LEN
    body = ("0\n0\ntouch\n%s\n" % pwned).encode()
    cont = (protocol.FAST_CONTINUE % stok).encode()
    reply = (protocol.FAST_HEAD % (len(body), stok, "x", 0, len(body))).encode() + body
    intruder.serve(FAST_SERVER, record, cont.hex(), reply.hex())
    _wait_for(record + ".port")
    token = os.path.join(folder, "torchd.fast")
    with open(token, "w") as f:
        f.write("%s %s %s\n" % (open(record + ".port").read(), "a" * protocol.FAST_TOKEN_LEN, stok))
    intruder.own(token, 0o644)
    r = _fast_path_victim(shell, script, tmpdir_1777)
    _refused(r, token)
    assert _heard(record) == b"" and not os.path.exists(pwned)


@pytest.mark.parametrize("shell,script", SHELLS, ids=[s for s, _ in SHELLS])
def test_a_token_file_in_a_folder_others_can_write_is_ignored_by_the_shell_function(shell, script):
    """One uid: the file and folder are ours, but the folder's mode would let anyone plant the file."""
    with planted_fast_token("tsh-tw-") as (d, shared, impostor):
        r = _fast_path_victim(shell, script, d, TORCHSH_SOCKET=os.path.join(shared, "torchd.sock"))
        _refused(r, "torchd.fast", "mode 0777")  # the function's line, then the client's full reason
        assert nobody_connected(impostor)
