"""`torch mcp`'s errors and policy through the official SDK's client, over stdio and streamable HTTP (one server
per test: a daemon has one MCP socket, so each test's `torch mcp --http` has it alone): a failed
command is a tool error whose JSON {code, message, hint} is the error the CLI prints for the same command line;
--read-only admits only commands that change nothing (the rest: not_allowed, and nothing ran); --allow and
--deny take command patterns, deny winning, nested commands (a layer spec) checked too."""
import json
import os
import re
import shlex

import pytest

from support.mcpclient import TRANSPORTS, connect, sh  # noqa: F401  (fixture: the module's own daemon)


def cli_error(sh, argv):
    """(code, stderr) of `torch ARGV` run by the user's shell, which must fail."""
    r = sh.run("torch " + shlex.join(argv))
    assert r.code != 0, (argv, r.out)
    return re.search(r"\[([a-z_]+)\]\s*$", r.err).group(1), r.err


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_a_wrong_op_a_bad_or_unknown_handle_and_a_shape_mismatch_carry_the_clis_error(sh, kind):
    a, b = sh("torch zeros 2; torch zeros 3").split()
    stale = sh("h=$(torch zeros 1); torch free $h; echo $h")
    with connect(sh, kind) as mcp:
        for argv in (["nosuchop", "1"], ["add", "tensor://nonsense", "1"], ["add", stale, "1"], ["add", a, b],
                     ["matmul", a, b]):
            error = mcp.run(*argv).error()
            code, line = cli_error(sh, argv)
            assert error["code"] == code, (argv, error, line)
            assert error["message"] and error["message"] in line, (error, line)
            assert error["hint"] is None or error["hint"] in line, (error, line)
        # errors of the tools' own arguments are tool errors of the same form
        assert mcp.call("help", command="no_such_command").error()["code"] == "unknown_op"
        code = mcp.call("inspect", handle="tensor://nonsense").error()["code"]
        assert code == cli_error(sh, ["describe", "tensor://nonsense"])[0], code
        assert mcp.call("run", argv=[]).error()["code"] == "usage"
    assert {cli_error(sh, argv)[0] for argv in (["nosuchop"], ["add", a, b])} == {"unknown_op", "shape_mismatch"}


def refused(session, *argv):
    """The not_allowed error of `run ARGV` (it must be refused)."""
    error = session.run(*argv).error()
    assert error["code"] == "not_allowed", (argv, error)
    return error


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_read_only_refuses_every_writing_command_before_it_runs_and_admits_reads(sh, kind):
    held = sh("torch arange 4 --dtype float32")
    model = sh("torch nn linear 2 2")
    saved = os.path.join(sh.folder, "ro-%s.pt" % kind)
    with connect(sh, kind, "--read-only") as ro:
        error = refused(ro, "nn", "save", model, saved)
        assert "read" in error["hint"].lower()  # names the flag to change
        refused(ro, "free", held)
        refused(ro, "requires_grad", held, "true")
        refused(ro, "manual_seed", "3")
        refused(ro, "randn", "3")  # draws from the generator
        refused(ro, "value", held, "--out", saved)  # a read-only verb, asked to write a file
        assert not os.path.exists(saved)
        assert json.loads(ro.ok("shape", held)) == [4]
        assert "3" in ro.ok("value", held)
        assert ro.run("add", held, "1").handles()  # a new object: nothing existing changes
        assert not ro.call("inspect", handle=model).is_error
        assert not ro.call("objects").is_error and not ro.call("search", query="add").is_error
    row = next(r for r in json.loads(sh("torch tensors --json")) if r["handle"] == held)
    assert not row["requires_grad"]  # nothing ran


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_deny_patterns_refuse_what_they_name_nested_layer_specs_included(sh, kind):
    with connect(sh, kind, "--deny", "nn.*", "--deny", "free") as denied:
        refused(denied, "nn", "linear", "2", "2")
        held = denied.run("zeros", "2").handles()[0]
        refused(denied, "free", held)
    with connect(sh, kind, "--deny", "nn.relu") as denied:
        refused(denied, "nn", "sequential", "linear 3 2", "relu")  # the layer spec runs nn.relu
        assert denied.run("nn", "sequential", "linear 3 2").handles()


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_allow_alone_admits_only_its_patterns_and_deny_wins_over_allow(sh, kind):
    with connect(sh, kind, "--allow", "zeros", "--allow", "shape", "--allow", "nn.*", "--deny", "nn.save") as few:
        held = few.run("zeros", "2", "3").handles()[0]
        assert json.loads(few.ok("shape", held)) == [2, 3]
        refused(few, "ones", "2")
        model = few.run("nn", "linear", "2", "2").handles()[0]
        refused(few, "nn", "save", model, os.path.join(sh.folder, "allow-%s.pt" % kind))
    with connect(sh, kind, "--read-only", "--allow", "free") as ro_free:
        ro_free.ok("free", held)
        refused(ro_free, "manual_seed", "1")
