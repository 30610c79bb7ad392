"""torch.nu trusts a socket only in a private folder of ours, as the client does (docs/security.md).

nu's `http --unix-socket` cannot read the peer's uid, so the module checks the folder instead: a
socket in a folder that others can write in (or that is not ours) is refused before a byte is sent.
"""
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
