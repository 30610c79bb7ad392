"""Every error class: one line on stderr, `torch: OP: message`, a stable code, its exit status."""
import pytest


def _err(sh, script):
    r = sh.run(script)
    lines = r.err.strip().split("\n")
    assert len(lines) == 1, r.err
    return r.code, lines[0]


def test_unknown_op_exits_2_and_suggests(sh):
    code, line = _err(sh, "torch matmull")
    assert code == 2 and line.startswith("torch: matmull: ") and "[unknown_op]" in line
    assert "matmul" in line  # did you mean


def test_unknown_flag_exits_2_and_lists_valid_flags(sh):
    code, line = _err(sh, "a=$(torch ones '[2]'); torch sum $a --dimm 0")
    assert code == 2 and "unknown flag --dimm" in line and "--dim" in line and "[unknown_flag]" in line


def test_missing_argument_shows_usage(sh):
    code, line = _err(sh, "torch add")
    assert code == 2 and "usage: torch add" in line and "[missing_argument]" in line


def test_extra_arguments_show_usage(sh):
    code, line = _err(sh, "a=$(torch ones '[2]'); torch neg $a $a $a")
    assert code == 2 and "usage: torch neg" in line


def test_unparsable_value_is_a_usage_error(sh):
    code, line = _err(sh, "torch ones '[2]' --dtype floaty")
    assert code == 2 and line.startswith("torch: ones: ")


def test_unknown_handle_exits_3(sh):
    h = sh("torch ones '[1]'")
    sh("torch free %s" % h)
    code, line = _err(sh, "torch neg %s" % h)
    assert code == 3 and "[unknown_handle]" in line and h in line


def test_stale_handle_from_an_earlier_daemon_exits_3(sh):
    h = sh("torch ones '[1]'")
    stale = h[:9] + ("a" if h[9] != "a" else "b") + h[10:]  # same shape, another epoch
    code, line = _err(sh, "torch neg %s" % stale)
    assert code == 3 and "[stale_handle]" in line and "daemon that has exited" in line


def test_a_handle_of_the_wrong_kind_is_named_and_exits_3(sh):
    model = sh("torch nn linear 2 2")
    code, line = _err(sh, "torch neg %s" % model)
    assert code == 3 and "[wrong_kind]" in line and "is a module, but a tensor is needed" in line
    code, line = _err(sh, "torch step $(torch ones '[1]')")
    assert code == 3 and "[wrong_kind]" in line


def test_malformed_handle_is_not_a_crash(sh):
    code, line = _err(sh, "torch neg tensor://!!")
    assert code in (2, 3) and line.startswith("torch: neg: ")


def test_shape_error_names_both_shapes_and_exits_4(sh):
    code, line = _err(sh, "torch add $(torch zeros '[2,3]') $(torch ones '[4]')")
    assert code == 4 and "shapes [2,3] and [4] are not broadcastable" in line and "[shape_mismatch]" in line


def test_dtype_error_exits_4(sh):
    code, line = _err(sh, "torch mean $(torch tensor '[1,2,3]')")
    assert code == 4 and line.startswith("torch: mean: ") and "Long" in line


def test_missing_file_exits_6(sh):
    code, line = _err(sh, "torch load /nonexistent/x.npy")
    assert code == 6 and "[file_error]" in line


def test_daemon_unavailable_exits_5(sh, tmp_path):
    r = sh.run("torch daemon status", env={"TORCHSH_SOCKET": str(tmp_path / "none.sock")})
    assert r.code == 5 and "[daemon_unavailable]" in r.err and len(r.err.strip().split("\n")) == 1


@pytest.mark.parametrize("body", ["garbage", "GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n"])
def test_bad_requests_never_kill_the_daemon(sh, body):
    import socket
    s = socket.socket(socket.AF_UNIX)
    s.connect(sh.socket)
    s.sendall(body.encode() + b"\r\n\r\n")
    s.recv(65536)
    s.close()
    assert sh("torch ones '[1]' | torch value") == "[1.0]"


def test_help_shows_usage_and_docs(sh):
    out = sh("torch add --help")
    assert out.startswith("usage: torch add") and "alpha" in out
