"""torch.nu trusts a socket only in a private folder of ours, as the client does (docs/security.md).

nu's `http --unix-socket` cannot read the peer's uid, so the module checks the folder instead: a
socket in a folder that others can write in (or that is not ours) is refused before a byte is sent.
"""
import contextlib
import json
import os
import socket
import threading


def _listening_socket(path):
    """A server that records whether anybody sent it anything."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(4)
    srv.settimeout(10)
    heard = []

    def serve():
        try:
            conn, _ = srv.accept()
            conn.settimeout(5)
            heard.append(conn.recv(65536))
            conn.close()
        except OSError:
            pass
    threading.Thread(target=serve, daemon=True).start()
    return srv, heard


def test_nu_refuses_a_socket_in_a_folder_others_can_write_in(nu, tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir()
    os.chmod(folder, 0o777)
    sock = str(folder / "torchd.sock")
    srv, heard = _listening_socket(sock)
    try:
        r = nu.run("try { torch ones [2] } catch {|e| print $e.msg; print ($e.json | from json | get code? | default '') }",
                   env={"TORCHSH_SOCKET": sock})
        assert "others can write in it" in r.out + r.err, r
        assert heard in ([], [b""]), "the module sent %r to an untrusted socket" % heard
    finally:
        srv.close()


def test_nu_block_forms_apply_only_torchsh_settings(nu):
    """A block's settings come from the daemon's reply; only TORCHSH_* ones may reach the block."""
    assert nu("torch scope { $env.TORCHSH_SCOPE? | is-not-empty }") == "true"


def test_nu_checks_a_folder_under_tmp_on_every_call(fresh_sh):
    """/tmp's sticky bit lets a cleaner delete the folder for another user to make again: no verdict is kept."""
    from nutools import Nu
    s = fresh_sh()
    script = """torch ones [1] | ignore
^chmod 777 %s
try { torch ones [1]; print "sent" } catch {|e| print $e.msg }
^chmod 700 %s
print (stor open | get torchsh_trusted | length)""" % (s.folder, s.folder)
    out = Nu(s)(script).split("\n")
    assert "others can write in it" in out[0] and out[1] == "0"


def test_nu_keeps_the_verdict_on_a_folder_under_a_sealed_runtime_dir(sh, tmp_path):
    """Under an $XDG_RUNTIME_DIR that it and every folder above belong to us or root, writable by their
    owner only, nobody else can replace the folder: its first check is kept for the nu process. Under
    one in /tmp, where others can write, the folder is checked on every call."""
    import shutil
    import tempfile
    script = "torch ones [1] | ignore; print (stor open | get torchsh_trusted | to json --raw)"
    sealed = tempfile.mkdtemp(prefix="tsh-run-", dir=os.path.expanduser("~"))  # ~: sealed up to /
    try:
        for run, kept in ((sealed, 1), (str(tmp_path), 0)):
            folder = os.path.join(run, "torchsh")
            os.mkdir(folder, 0o700)
            with _daemon_in(sh, folder) as nu:
                assert json.loads(nu(script, env={"XDG_RUNTIME_DIR": run})) == [{"folder": folder, "kept": kept}]
    finally:
        shutil.rmtree(sealed, ignore_errors=True)


@contextlib.contextmanager
def _daemon_in(sh, folder):
    """Nu against a daemon of its own on folder/torchd.sock."""
    from nutools import Nu
    s = type(sh)(os.path.join(folder, "torchd.sock"), folder)
    s("torch daemon start")
    try:
        yield Nu(s)
    finally:
        s.run("torch daemon stop")
