"""`torch mcp` through POST /v1/cli: an exec reply whose argv runs the MCP server (python -m torchsh.agents)
with the verb's flags, pointed at this daemon's socket; a caller that cannot run it is refused before anything."""
import os

from support.callers import cli_body, raw

from torchsh import protocol


def test_torch_mcp_answers_an_exec_of_the_server_pointed_at_this_daemon(sh):
    argv = ["mcp", "--read_only", "--allow", "fit", "--allow", "lm.*", "--deny", "nn.save"]
    status, head, body = raw(sh.socket, "POST", protocol.CLI_PATH, cli_body(argv), replies=("exec",))
    assert status == 200 and head[protocol.H_EXIT] == "0" and protocol.H_EXEC in head
    env, then, run = protocol.decode_exec(body)
    server = ["-m", "torchsh.agents", "--read-only", "--allow", "fit", "--allow", "lm.*", "--deny", "nn.save"]
    assert [w.decode() for w in run[-len(server):]] == server
    assert os.path.isabs(run[0].decode()) and then == []
    assert env == [b"TORCHSH_SOCKET=" + sh.socket.encode()]


def test_a_caller_that_runs_no_command_is_refused_before_anything(sh):
    status, head, body = raw(sh.socket, "POST", protocol.CLI_PATH, cli_body(["mcp"]), replies=())
    assert head[protocol.H_EXIT] == str(protocol.EXIT_USAGE) and b"[needs_client]" in body
