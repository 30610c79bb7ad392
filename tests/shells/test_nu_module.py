"""torch.nu itself: generated from the op table and checked in (never stale), printed by `torch nu-module`,
typed signatures nu's help and completion read, and the external-client transport for older nu."""
import os
import subprocess
import sys

from nutools import MODULE, ROOT


def _regen():
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import regen
    return regen


def test_checked_in_module_and_completion_scripts_match_the_op_table():
    stale = _regen().stale()
    assert not stale, "stale generated files %s: run .venv/bin/python tools/regen.py" % [p for p, _ in stale]


def test_regen_check_exits_nonzero_naming_a_stale_file(tmp_path, monkeypatch):
    regen = _regen()
    monkeypatch.setattr(regen, "ARTIFACTS", [(str(tmp_path / "x.nu"), lambda table: "new text\n")])
    monkeypatch.setattr(regen, "ROOT", "/")
    assert regen.main(["--check"]) == 1
    assert regen.main([]) == 0 and (tmp_path / "x.nu").read_text() == "new text\n"
    assert regen.main(["--check"]) == 0


def test_nu_module_verb_prints_the_checked_in_module(sh):
    with open(MODULE) as f:
        assert sh("torch nu-module") + "\n" == f.read()


def test_top_level_ops_and_verbs_have_commands_with_their_flags_typed_and_their_defaults_told(nu):
    # the default is in the description, not declared: a flag not given is null and left out (nu
    # parses declared defaults at `use`, for ~600 commands), and the daemon applies it as for bash
    sig = nu.json("scope commands | where name == 'torch add' | get 0.signatures | values | get 0 "
                  "| where parameter_type == named | select parameter_name syntax_shape description")
    flags = {row["parameter_name"]: row for row in sig}
    assert flags["alpha"]["syntax_shape"] == "number" and "default 1" in flags["alpha"]["description"]
    assert nu.json("torch tensor [1.0] | torch add (torch tensor [2.0]) | torch value") == [3.0]
    assert nu.json("torch tensor [1.0] | torch add (torch tensor [2.0]) --alpha 3 | torch value") == [7.0]
    names = set(nu.json("scope commands | where name starts-with 'torch ' | get name"))
    for op in ("torch add", "torch matmul", "torch value", "torch optim sgd", "torch sched step_lr", "torch scope",
               "torch backward", "torch nn info", "torch forward", "torch train_step", "torch tensors"):
        assert op in names, op
    assert len(names) > 450


def test_no_command_shadows_a_builtin_the_module_calls_and_such_names_run_by_name(nu, sh):
    # `char` is both nu's builtin (the module's wire uses it) and PyTorch's int8 cast, Tensor.char
    from torchsh.shells.nushell import NU_BUILTINS_USED
    names = set(nu.json("scope commands | where name starts-with 'torch ' | get name"))
    assert not [b for b in NU_BUILTINS_USED if "torch " + b in names]
    assert nu.json("torch tensor [1.0 -2.7] | torch char | torch value") == [1, -2]
    assert nu.json("torch nn linear 2 3 | torch nn info | get kind") == "Linear"


def test_help_shows_summary_signatures_and_flag_defaults(nu):
    out = nu("help torch sum | print")
    assert "Returns the sum of all elements" in out
    assert "sum(Tensor input, int[]? dim, bool keepdim=False" in out
    assert "--keepdim" in out and "--dtype <string>" in out
    assert "--alpha <number>: the multiplier for other (Scalar; default 1)" in nu("help torch add | print")


def test_help_shows_pytorchs_argument_descriptions_as_torch_op_help_does(nu, sh):
    out = nu("help torch sum | print")
    assert "--dim <any>: the dimension or dimensions to reduce (int[]?)" in out
    assert "--keepdim: whether the output tensor has dim retained or not (bool)" in out
    assert "input: the input tensor;" in out   # a handle taken by position only: in the positional help
    assert "the dimension or dimensions to reduce" in sh("torch sum --help")  # the same words (docargs.py)
    # a verb's own Args, and a long description cut to one line
    train_step = nu("help torch train_step | print")
    assert "--autocast <string>: bf16 or fp16: forward and loss under torch.autocast" in train_step
    flags = [line for line in nu("help torch stft | print").split("\n") if line.startswith("  --")]
    assert flags and all(len(line) < 160 for line in flags)


def test_bare_names_are_aliases_of_their_full_command(nu):
    assert nu.json("torch tensor [-1.0 0.0 2.0] | torch relu | torch value") == [0.0, 0.0, 2.0]


def test_an_op_without_a_command_goes_to_the_external_client(nu):
    # `where` is a nu keyword: torch.nu cannot define `torch where`, so main passes it to ^torch
    out = nu.json("torch where (torch tensor [true false]) (torch tensor [1.0 2.0]) 0 | torch value")
    assert out == [1.0, 0.0]


def test_external_transport_module_gives_the_same_results(nu, sh, tmp_path):
    path = tmp_path / "torch.nu"
    path.write_text(sh("torch nu-module --transport external") + "\n")
    assert "http post --unix-socket" not in path.read_text()
    script = """
let a = (torch tensor [[1.0 2.0] [3.0 4.0]])
let s = ($a | torch add $a --alpha 2 | torch sum --dim 1 | torch value)
let m = (torch max $a --dim 1)
let e = (try { torch add $a (torch ones [3]); "no error" } catch {|err| $err.msg })
let g = (torch no_grad { torch tensor [1.0] --requires_grad | torch mul 2 | torch requires_grad })
{s: $s, m: ($m | columns), v: (torch tensor [NaN 1.0] | torch value | to nuon), e: $e, g: $g} | to json --raw | print
"""
    import json
    got = json.loads(nu(script, module=str(path)))
    assert got["s"] == [9.0, 21.0] and got["m"] == ["values", "indices"]
    assert got["v"] == "[NaN, 1.0]" and got["g"] is False
    assert got["e"].startswith("torch add: ") and "broadcast" in got["e"]


def test_module_loads_in_a_fresh_nu_without_a_daemon_call(nu, tmp_path):
    # `use torch.nu` only parses: no request, so it works before the daemon exists
    env = dict(TORCHSH_SOCKET=str(tmp_path / "none.sock"))
    assert nu("print (scope commands | where name == 'torch add' | length)", env=env) == "1"


def test_commands_start_the_daemon_when_its_socket_does_not_answer(nu, fresh_sh):
    shell = fresh_sh(start=False)
    try:
        out = nu("torch ones [2] | torch sum | torch item | print", env={"TORCHSH_SOCKET": shell.socket})
        assert out == "2.0"
    finally:
        subprocess.run(["bash", "-c", "torch daemon stop"], env=dict(shell.env), capture_output=True)
