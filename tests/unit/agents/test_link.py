"""The link's pure parts: the policy header the server sends, the error row it reads back, the schemas it
shows agents."""
import json

from torchsh.agents import link, server
from torchsh.call import policy


def test_a_policy_that_admits_everything_sends_no_header():
    assert link.policy_header(link.Policy()) == b""


def test_the_policy_header_is_one_ascii_json_line_the_daemon_reads_back():
    header = link.policy_header(link.Policy(read_only=True, allow=("nn.*",), deny=("fit", "é")))
    name, _, value = header.rstrip(b"\r\n").partition(b": ")
    assert name.decode() == link.H_POLICY and header.endswith(b"\r\n") and b"\n" not in header[:-1]
    assert value.isascii() and json.loads(value) == {"read_only": True, "allow": ["nn.*"], "deny": ["fit", "é"]}
    assert policy.from_header(value.decode()) == link.Policy(read_only=True, allow=("nn.*",), deny=("fit", "é"))


def test_the_error_row_comes_from_the_header_first_then_the_stderr_line():
    header = json.dumps({"code": "not_allowed", "message": "m", "hint": "h", "op": "fit"})
    assert link._error(header, "anything")["code"] == "not_allowed"
    parsed = link._error(None, "warning: x\ntorch: nn save: cannot write /x; check the folder [file_error]\n")
    assert parsed == {"op": "nn save", "message": "cannot write /x", "hint": "check the folder", "code": "file_error"}
    assert link._error(None, "") is None


def test_schemas_lose_titles_and_optional_unions():
    schema = {"title": "runArguments", "type": "object", "properties": {
        "stdin": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Stdin"},
        "title": {"type": "string", "title": "Title"}}}
    assert server.compact_schema(schema) == {"type": "object", "properties": {
        "stdin": {"type": "string", "default": None}, "title": {"type": "string"}}}
