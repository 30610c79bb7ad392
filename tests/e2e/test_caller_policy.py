"""A caller's policy (protocol.H_POLICY, what `torch mcp --read_only/--allow/--deny` sends) through POST /v1/cli:
refused commands run nothing and fail with not_allowed; every failure carries its error as data (H_ERROR)."""
import json

import pytest
from support.callers import cli_body, raw

from torchsh import protocol


def _cli(sh, argv, policy=None, raw_policy=None):
    """(exit, stdout, stderr, headers) of argv posted with this policy as its H_POLICY header."""
    headers = {}
    if policy is not None or raw_policy is not None:
        headers[protocol.H_POLICY] = raw_policy if raw_policy is not None else json.dumps(policy)
    status, head, body = raw(sh.socket, "POST", protocol.CLI_PATH, cli_body(argv, tty=True), replies=(),
                             headers=headers)
    assert status == 200
    n = int(head[protocol.H_STDOUT])
    return int(head[protocol.H_EXIT]), body[:n].decode(), body[n:].decode(), head


def _refused(sh, argv, policy):
    code, out, err, head = _cli(sh, argv, policy)
    assert code == protocol.EXIT_USAGE and out == "" and err.endswith("[not_allowed]\n"), (argv, err)
    return json.loads(head[protocol.H_ERROR])


@pytest.fixture(scope="module")
def handles(sh):
    x = sh("torch randn 2 3 --requires_grad")
    return {"x": x, "loss": sh("torch sum %s" % x), "m": sh("torch nn linear 3 2")}


def test_read_only_refuses_what_changes_state_and_runs_nothing(sh, handles, tmp_path):
    before = sh("torch tensors -q | wc -l")
    for argv in (["randn", "2"], ["nn", "save", handles["m"], str(tmp_path / "m.safetensors")],
                 ["backward", handles["loss"]], ["value", handles["x"], "--out", str(tmp_path / "x.npy")]):
        error = _refused(sh, argv, {"read_only": True})
        assert error["code"] == "not_allowed" and "--read_only" in error["hint"] + error["message"]
    assert sh("torch tensors -q | wc -l") == before
    assert not list(tmp_path.iterdir())
    assert sh.run("torch grad %s" % handles["x"]).code != 0  # backward never ran: no .grad yet


def test_read_only_admits_reading_and_computing(sh, handles):
    for argv in (["shape", handles["x"]], ["add", handles["x"], "1"], ["describe", handles["x"]],
                 ["nn", "info", handles["m"]], ["tensors"], ["ops", "--json"]):
        code, out, err, head = _cli(sh, argv, {"read_only": True})
        assert code == 0 and protocol.H_ERROR not in head, (argv, err)
    assert _cli(sh, ["shape", handles["x"]], {"read_only": True})[1] == "[2,3]\n"


def test_allow_alone_admits_its_matches_and_deny_wins(sh, handles):
    only = {"allow": ["nn.*", "shape"]}
    assert _cli(sh, ["shape", handles["x"]], only)[0] == 0
    assert _cli(sh, ["nn", "info", handles["m"]], only)[0] == 0
    assert _refused(sh, ["add", handles["x"], "1"], only)["op"] == "add"
    both = {"read_only": True, "allow": ["randn"], "deny": ["nn.info", "sha*"]}
    assert _cli(sh, ["randn", "2"], both)[0] == 0
    assert _cli(sh, ["dtype", handles["x"]], both)[0] == 0
    assert "--deny 'sha*'" in _refused(sh, ["shape", handles["x"]], both)["hint"]
    _refused(sh, ["nn", "info", handles["m"]], both)


def test_a_command_a_sweep_runs_inside_is_held_to_the_policy(sh):
    loader = sh("torch data loader $(torch data tensors $(torch randn 16 4) $(torch randint 3 '[16]')) "
                "--batch_size 8 --seed 0")
    argv = ["sweep", "--model", "linear 4 {width}", "--opt", "sgd --lr 0.1", "--space", "width: [3]",
            "--trials", "1", "--data", loader, "--loss", "cross_entropy", "--epochs", "1", "--seed", "0"]
    code, out, err, head = _cli(sh, argv, {"deny": ["nn.linear"]})
    assert code == protocol.EXIT_USAGE and "[not_allowed]" in err, err
    assert json.loads(head[protocol.H_ERROR])["code"] == "not_allowed"
    assert _cli(sh, argv, {"deny": ["nn.conv*"]})[0] == 0


@pytest.mark.parametrize("text", ["{", '{"read_only": 1}', '{"allow": "fit"}'])
def test_a_malformed_policy_is_bad_request_and_runs_nothing(sh, text):
    code, out, err, head = _cli(sh, ["randn", "2"], raw_policy=text)
    assert code == protocol.EXIT_USAGE and out == "" and err.endswith("[bad_request]\n")
    assert json.loads(head[protocol.H_ERROR])["code"] == "bad_request"


@pytest.mark.parametrize("argv", [["add", "torch-nothing"], ["no_such_op"], ["randn", "--bogus"],
                                  ["matmul", "[[1,2]]", "[[1,2]]"]])
def test_every_failure_carries_its_error_as_the_line_says_it(sh, argv):
    code, out, err, head = _cli(sh, argv)
    error = json.loads(head[protocol.H_ERROR])
    assert set(error) == {"code", "message", "hint", "op"} and head[protocol.H_ERROR].isascii()
    hint = "; %s" % error["hint"] if error["hint"] else ""
    assert err == "torch: %s: %s%s [%s]\n" % (error["op"], error["message"], hint, error["code"])
    assert code == protocol.exit_status(error["code"])


def test_a_success_carries_no_error(sh):
    code, out, err, head = _cli(sh, ["zeros", "2"])
    assert code == 0 and protocol.H_ERROR not in head


def test_the_op_table_says_which_commands_are_read_only(sh):
    status, _, body = raw(sh.socket, "GET", "/v1/ops")
    rows = {r["name"]: r["read_only"] for r in json.loads(body)["ops"]}
    assert status == 200 and (rows["describe"], rows["add"], rows["randn"], rows["nn.save"]) == (True, True, False,
                                                                                                False)
    status, _, body = raw(sh.socket, "GET", "/v1/ops/value")
    assert json.loads(body)["read_only"] is True


def test_the_json_api_applies_the_same_policy(sh):
    """POST /v1/ops/{op} with the policy header: refused as the CLI face refuses (403 not_allowed, nothing made),
    admitted commands run."""
    policy = {protocol.H_POLICY: json.dumps({"read_only": True}), "Content-Type": "application/json"}
    before = sh("torch tensors -q | wc -l")
    status, _, body = raw(sh.socket, "POST", "/v1/ops/randn", json.dumps({"args": [[2]]}).encode(), headers=policy)
    assert status == 403 and json.loads(body)["error"]["code"] == "not_allowed", body
    assert sh("torch tensors -q | wc -l") == before
    status, _, body = raw(sh.socket, "POST", "/v1/ops/zeros", json.dumps({"args": [[2]]}).encode(), headers=policy)
    assert status == 200, body
