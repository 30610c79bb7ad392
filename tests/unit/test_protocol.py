"""protocol.py: the /v1/cli framing and the error table both sides rely on."""
from torchsh import paths, protocol


def test_cli_request_round_trips():
    body = protocol.encode_cli_request([b"add", b"tensor://abc00001", b"--alpha=2"], b"/tmp", False,
                                       [b"TORCHSH_SCOPE=s1"], [b"tensor://abc00002"])
    req = protocol.decode_cli_request(body)
    assert req == {"cwd": "/tmp", "stdin_is_tty": False, "stderr_is_tty": False, "env": {"TORCHSH_SCOPE": "s1"},
                   "stdin": ["tensor://abc00002"], "argv": ["add", "tensor://abc00001", "--alpha=2"]}


def test_cli_request_says_whether_stderr_is_a_terminal():
    body = protocol.encode_cli_request([b"x"], b"/", False, [], stderr_is_tty=True)
    req = protocol.decode_cli_request(body)
    assert (req["stdin_is_tty"], req["stderr_is_tty"]) == (False, True)
    old = body.replace(b"\x0001\x00", b"\x000\x00", 1)  # a one-byte tty field (an older bash function): stderr unknown
    assert protocol.decode_cli_request(old)["stderr_is_tty"] is False


def test_no_stdin_differs_from_empty_stdin():
    none = protocol.decode_cli_request(protocol.encode_cli_request([b"x"], b"/", True, []))
    empty = protocol.decode_cli_request(protocol.encode_cli_request([b"x"], b"/", True, [], []))
    assert none["stdin"] is None and empty["stdin"] == []


def test_exec_directive_round_trips():
    body = protocol.encode_exec(["bash", "-c", "torch ones '[1]'"], {"TORCHSH_SCOPE": "s2"}, ["scope", "end", "s2"])
    env, then, argv = protocol.decode_exec(body)
    assert env == [b"TORCHSH_SCOPE=s2"] and then == [b"scope", b"end", b"s2"]
    assert argv == [b"bash", b"-c", b"torch ones '[1]'"]


def test_every_error_code_has_an_http_and_exit_status():
    for code, (http, exit_code, meaning) in protocol.ERRORS.items():
        assert 400 <= http < 600 and 1 <= exit_code <= 6 and meaning
    assert protocol.exit_status("no_such_code") == protocol.EXIT_INTERNAL


def test_sibling_files_sit_beside_the_socket():
    assert paths.sibling("/run/torchsh/torchd.sock", ".log") == "/run/torchsh/torchd.log"


def test_a_socket_path_must_fit_sun_path_with_its_nul():
    limit = paths.SUN_PATH
    assert paths.socket_path_too_long("/" + "s" * (limit - 2)) is None  # limit-1 bytes, then the NUL
    problem = paths.socket_path_too_long("/" + "s" * (limit - 1))
    assert "is %d bytes" % limit in problem and "at most %d" % (limit - 1) in problem and "sun_path" in problem
    assert paths.socket_path_too_long("/" + "é" * (limit // 2)) is not None  # bytes, not characters


def test_the_stop_grace_is_ten_seconds_unless_torchsh_stop_grace_says_otherwise():
    assert protocol.stop_grace_s(None) == protocol.stop_grace_s("") == 10.0
    assert protocol.stop_grace_s("600") == protocol.stop_grace_s(b"600") == 600.0  # the client reads bytes
    assert protocol.stop_grace_s("soon") == 10.0 and protocol.stop_grace_s("-5") == 0.0
