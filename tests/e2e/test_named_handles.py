"""Named handles (`@name`, registry/names.py): accepted wherever a handle is and kind-checked there, Docker's
collision rule with --force and a reflog, TTL expiry, patterns, pinning across a scope, the JSON API, and
`@name` unquoted through bash and zsh with extendedglob (Nushell: tests/shells/test_nu_names.py)."""
import json
import shutil
import subprocess
import time

import torch

from support.apicall import post


def test_a_name_stands_for_its_handle_in_every_argument_slot(sh):
    a = sh.put(torch.tensor([1.0, 2.0]))
    sh("torch name %s @names/a" % a)
    got = sh.fetch(sh("torch add @names/a @names/a"))
    assert torch.equal(got, torch.tensor([2.0, 4.0]))
    assert torch.equal(sh.fetch(sh("echo @names/a | torch mul 3")), torch.tensor([3.0, 6.0]))  # a stdin line
    assert torch.equal(sh.fetch(sh("echo @names/a | torch sub - 1")), torch.tensor([0.0, 1.0]))  # `-`


def test_name_flag_names_what_a_creating_command_makes(sh):
    h = sh("torch zeros 2 3 --name names/z")
    assert sh("torch names @names/z -q") == "@names/z"
    assert json.loads(sh("torch names @names/z --json"))[0]["handle"] == h
    r = sh.run("torch value %s --name names/nope" % h)  # value makes no object: refused before it runs
    assert r.code == 2 and "[bad_argument]" in r.err


def test_a_name_of_another_kind_is_wrong_kind_like_a_handle(sh):
    t = sh("torch zeros 2 3 --name names/t")
    m = sh("torch nn linear 3 2 --name names/m")
    by_handle, by_name = sh.run("torch forward %s %s" % (t, t)), sh.run("torch forward @names/t @names/t")
    assert by_handle.code == by_name.code == 3
    assert "[wrong_kind]" in by_handle.err and "[wrong_kind]" in by_name.err
    assert sh("torch shape $(torch forward @names/m @names/t)") == "[2,2]"
    assert m.startswith("nn://")


def test_an_unknown_name_is_unknown_name_with_the_close_ones(sh):
    sh("torch zeros 1 --name names/encoder")
    r = sh.run("torch value @names/encodr")
    assert r.code == 3 and "[unknown_name]" in r.err and "@names/encoder" in r.err


def test_a_taken_name_is_name_in_use_until_forced_and_the_old_object_stays_as_tilde_1(sh):
    first = sh("torch ones 2 --name names/enc")
    second = sh("torch zeros 2")
    r = sh.run("torch name %s @names/enc" % second)
    assert r.code == 3 and "[name_in_use]" in r.err and first in r.err
    sh("torch name %s @names/enc --force" % second)
    assert sh("torch value @names/enc") == "[0.0,0.0]"
    assert sh("torch value @names/enc~1") == "[1.0,1.0]"
    assert json.loads(sh("torch names @names/enc --json"))[0]["reflog"] == [first]


def test_an_invalid_name_is_refused(sh):
    t = sh("torch zeros 1")
    for bad in ("@/root", "@a b", "@x//y", "@"):
        r = sh.run("torch name %s '%s'" % (t, bad))
        assert r.code == 2 and "[bad_argument]" in r.err, bad


def test_a_name_with_a_ttl_frees_its_object_when_it_expires(sh):
    h = sh("torch zeros 2")
    sh("torch name %s @names/brief --ttl 1s" % h)
    deadline = time.time() + 30
    while h in sh("torch tensors -q") and time.time() < deadline:
        time.sleep(0.2)
    assert h not in sh("torch tensors -q")
    assert "[unknown_name]" in sh.run("torch value @names/brief").err


def test_free_takes_a_name_pattern_and_drops_the_names(sh):
    a, b = sh("torch zeros 1 --name names/exp1/a"), sh("torch zeros 1 --name names/exp1/b")
    keep = sh("torch zeros 1 --name names/exp2/a")
    assert sh("torch names '@names/exp1/*' -q").split() == ["@names/exp1/a", "@names/exp1/b"]
    sh("torch free '@names/exp1/*'")
    held = sh("torch tensors -q").split()
    assert a not in held and b not in held and keep in held
    assert sh("torch names '@names/exp1/*' -q") == ""
    assert "[unknown_name]" in sh.run("torch free '@names/exp1/*'").err


def test_free_by_name_frees_the_object_and_drops_the_name(sh):
    h = sh("torch zeros 1 --name names/gone")
    sh("torch free @names/gone")
    assert h not in sh("torch tensors -q") and sh("torch names @names/gone -q") == ""


def test_a_named_object_outlives_its_scope_and_the_census_shows_its_name(sh):
    out = sh("torch scope -- bash -c 'torch zeros 3 --name names/kept; torch zeros 4'").split()
    held = sh("torch tensors -q").split()
    assert out[0] in held and out[1] not in held
    rows = {r["handle"]: r for r in json.loads(sh("torch tensors --json"))}
    assert rows[out[0]]["names"] == ["names/kept"]


def test_the_json_api_takes_a_name_as_an_argument_and_names_what_it_makes(sh):
    sh("torch ones 2 --name names/api")
    for _ in range(2):  # the second call of a shape takes the remembered plan (api/calls.py)
        status, reply = post(sh, "add", {"args": ["@names/api", 2]})
        assert status == 200 and torch.equal(sh.fetch(reply["result"]), torch.tensor([3.0, 3.0]))
    status, reply = post(sh, "zeros", {"args": [2], "name": "names/api2"})
    assert status == 200 and sh("torch names @names/api2 --json").count(reply["result"]) == 1
    status, reply = post(sh, "forward", {"args": ["@names/api", "@names/api"]})
    assert status == 409 and reply["error"]["code"] == "wrong_kind"
    status, reply = post(sh, "add", {"args": ["@names/apii", 2]})
    assert status == 404 and reply["error"]["code"] == "unknown_name"


def test_a_name_passes_unquoted_through_bash_and_zsh_with_extendedglob(sh):
    sh("torch ones 2 --name names/sh")
    assert sh("torch value @names/sh") == "[1.0,1.0]"
    zsh = shutil.which("zsh")
    assert zsh, "zsh is not installed: scripts/bootstrap.sh --with-shells"
    for prelude in ("setopt extendedglob", 'setopt extendedglob; eval "$(torch init zsh)"'):
        p = subprocess.run([zsh, "-f", "-c", prelude + "\ntorch value @names/sh"], env=sh.env, cwd=sh.folder,
                           capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert (p.returncode, p.stdout) == (0, "[1.0,1.0]\n"), p.stderr


def test_ttl_goes_with_name_on_a_creating_command_and_alone_is_refused(sh):
    sh("torch zeros 2 --name names/short --ttl 1h")
    assert 3500 < json.loads(sh("torch names @names/short --json"))[0]["ttl_s"] <= 3600
    r = sh.run("torch zeros 2 --ttl 1h")
    assert r.code == 2 and "[bad_argument]" in r.err and "--name" in r.err
    r = sh.run("torch zeros 2 --name names/bad --ttl soon")
    assert r.code == 2 and "[bad_argument]" in r.err and sh("torch names @names/bad -q") == ""
    code, body = post(sh, "zeros", {"args": [2], "kwargs": {"name": "names/apittl", "ttl": "2h"}})
    assert code == 200, body
    assert 7100 < json.loads(sh("torch names @names/apittl --json"))[0]["ttl_s"] <= 7200


def test_a_wrong_kind_error_for_a_name_names_it_with_its_handle(sh):
    t = sh("torch zeros 2 3 --name names/wt")
    for script in ("torch nn parameters @names/wt", "echo @names/wt | torch nn parameters"):
        r = sh.run(script)
        assert r.code == 3 and r.err == ("torch: nn parameters: @names/wt (%s) is a tensor, but a module is needed "
                                         "here [wrong_kind]\n" % t), r.err
    m = sh("torch nn linear 3 2 --name names/wm")
    code, body = post(sh, "add", {"args": ["@names/wm", 1]})
    assert code >= 400 and body["error"]["code"] == "wrong_kind", body
    assert body["error"]["message"] == "@names/wm (%s) is a module, but a tensor is needed here" % m
