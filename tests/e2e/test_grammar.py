"""The CLI grammar: positionals, flags, scalars, stdin prefix rule, variadic ops, while-read loops."""
import subprocess

import pytest
import torch

from support.required import require_tool


def test_flag_spellings_are_equivalent(sh):
    a = sh("torch tensor '[[1.0,2.0],[3.0,4.0]]'")
    forms = ["--dim 1 --keepdim", "--dim=1 --keepdim=true", "--dim 1 --keepdim true"]
    outs = {sh("torch sum %s %s | torch value" % (a, f)) for f in forms}
    assert outs == {"[[3.0],[7.0]]"}


def test_dash_and_underscore_fold_in_flags(sh):
    import json
    h1 = sh("torch ones '[2]' --requires-grad")
    h2 = sh("torch ones '[2]' --requires_grad")
    rows = {r["handle"]: r for r in json.loads(sh("torch tensors --json"))}
    assert rows[h1]["requires_grad"] and rows[h2]["requires_grad"]


def test_scalar_operands_pick_the_scalar_overload(sh):
    a = sh("torch tensor '[1.0, 2.0]'")
    assert sh("torch add %s 2 --alpha 3 | torch value" % a) == "[7.0,8.0]"
    assert sh("torch pow 2 %s | torch value" % a) == "[2.0,4.0]"
    assert sh("torch mul %s 0.5 | torch value" % a) == "[0.5,1.0]"


def test_reductions_take_an_int_or_a_list_of_dims(sh):
    a = sh("torch ones '[2,3,4]'")
    assert sh("torch sum %s --dim 1 | torch shape" % a) == "[2,4]"
    assert sh("torch sum %s --dim '[0,2]' | torch shape" % a) == "[3]"
    assert sh("torch mean %s --dim '[0,2]' --keepdim | torch shape" % a) == "[1,3,1]"


def test_multi_output_ops_print_one_handle_per_line(sh):
    a = sh("torch tensor '[[1.0,5.0],[7.0,3.0]]'")
    lines = sh("torch max %s --dim 1" % a).split("\n")
    assert len(lines) == 2 and all(l.startswith("tensor://") for l in lines)
    assert sh("torch value %s" % lines[0]) == "[5.0,7.0]"
    assert sh("torch value %s" % lines[1]) == "[1,0]"


def test_stdin_fills_leftmost_slot_and_arguments_shift_right(sh):
    a = sh("torch tensor '[8.0]'")
    b = sh("torch tensor '[2.0]'")
    assert sh("echo %s | torch div %s | torch value" % (a, b)) == "[4.0]"


def test_stdin_fills_two_missing_slots_in_order(sh):
    a = sh("torch tensor '[8.0]'")
    b = sh("torch tensor '[2.0]'")
    assert sh("printf '%s\\n%s\\n' | torch div | torch value" % (a, b)) == "[4.0]"


def test_variadic_ops_read_all_stdin_lines(sh):
    hs = [sh("torch full '[2]' %d" % i) for i in range(3)]
    out = sh("printf '%s\\n' | torch cat --dim 0 | torch value" % "\\n".join(hs))
    assert out == "[0,0,1,1,2,2]"
    assert sh("torch stack %s | torch shape" % " ".join(hs)) == "[3,2]"


def test_stdin_is_not_read_when_no_slot_is_missing(sh):
    """`while read` loops keep their input: a complete command must not swallow a line."""
    hs = [sh("torch full '[1]' %d.0" % i) for i in range(4)]
    b = sh("torch tensor '[10.0]'")
    script = "while read h; do torch add $h %s | torch value; done" % b
    out = sh(script, stdin="\n".join(hs) + "\n")
    assert out.split("\n") == ["[10.0]", "[11.0]", "[12.0]", "[13.0]"]


def test_while_read_with_stdin_consumer_takes_exactly_one_line_each(sh):
    """Commands that do read stdin take exactly the lines they need."""
    hs = [sh("torch full '[1]' %d.0" % i) for i in range(3)]
    script = "torch neg | torch value; torch neg | torch value; cat"
    out = sh(script, stdin="\n".join(hs) + "\n")
    assert out.split("\n") == ["[-0.0]", "[-1.0]", hs[2]]


def test_results_equal_in_process_pytorch(sh):
    x = torch.randn(3, 4, dtype=torch.float64)
    y = torch.randn(4, 5, dtype=torch.float64)
    hx, hy = sh.put(x), sh.put(y)
    assert torch.equal(sh.fetch(sh("torch matmul %s %s" % (hx, hy))), x @ y)
    assert torch.equal(sh.fetch(sh("torch permute %s '[1,0]'" % hx)), x.permute(1, 0))
    assert torch.equal(sh.fetch(sh("torch reshape %s '[2,6]'" % hx)), x.reshape(2, 6))
    assert torch.equal(sh.fetch(sh("torch transpose %s 0 1" % hx)), x.transpose(0, 1))
    assert torch.equal(sh.fetch(sh("torch unsqueeze %s 0 | torch squeeze" % hx)), x)
    assert torch.equal(sh.fetch(sh("torch flatten %s" % hx)), x.flatten())
    assert torch.equal(sh.fetch(sh("torch mm %s %s" % (hx, hy))), x.mm(y))
    assert torch.equal(sh.fetch(sh("torch gt %s 0" % hx)), x > 0)


def test_creation_ops_take_a_json_shape_first(sh):
    for op, ref in [("zeros", torch.zeros(2, 3)), ("ones", torch.ones(2, 3)), ("eye", torch.eye(3))]:
        arg = "3" if op == "eye" else "'[2,3]'"
        assert torch.equal(sh.fetch(sh("torch %s %s" % (op, arg))), ref)
    assert torch.equal(sh.fetch(sh("torch full '[2]' 7")), torch.full([2], 7))
    assert torch.equal(sh.fetch(sh("torch arange 10 --start 2 --step 3")), torch.arange(2, 10, 3))
    assert torch.equal(sh.fetch(sh("torch linspace 0 1 5")), torch.linspace(0, 1, 5))
    a = sh("torch ones '[2,2]' --dtype float64")
    assert torch.equal(sh.fetch(sh("torch zeros_like %s" % a)), torch.zeros(2, 2, dtype=torch.float64))


def test_dtype_and_device_flags(sh):
    t = sh.fetch(sh("torch ones '[2]' --dtype bfloat16 --device cpu"))
    assert t.dtype == torch.bfloat16
    assert sh("torch ones '[2]' | torch to --dtype int32 | torch dtype") == "int32"


def test_default_device_comes_from_the_environment(sh):
    r = sh.run("torch ones '[2]'", env={"TORCHSH_DEVICE": "meta"})
    assert r.code == 0
    assert "meta" in sh("torch tensors --json | grep -o '\"device\":\"meta\"' | head -1")


def test_sizes_as_separate_words_equal_the_json_shape_and_pytorch(sh):
    for op in ("zeros", "ones", "empty"):
        assert sh("torch %s 2 3 | torch shape" % op) == sh("torch %s '[2,3]' | torch shape" % op) == "[2,3]"
    for op in ("rand", "randn"):
        got = sh.fetch(sh("torch manual_seed 0 >/dev/null; torch %s 2 3" % op))
        torch.manual_seed(0)
        assert torch.equal(got, getattr(torch, op)(2, 3))


def test_tensor_methods_take_sizes_as_separate_words_like_pytorch(sh):
    x = torch.arange(6.0).reshape(2, 3)
    h = sh.put(x)
    cases = {"reshape %s 3 2": x.reshape(3, 2), "permute %s 1 0": x.permute(1, 0),
             "expand %s 2 2 3": x.expand(2, 2, 3), "repeat %s 2 1": x.repeat(2, 1), "flip %s 0 1": x.flip(0, 1)}
    for words, want in cases.items():
        assert torch.equal(sh.fetch(sh("torch " + words % h)), want), words
        piped = "echo %s | torch %s" % (h, words.replace(" %s", ""))
        assert torch.equal(sh.fetch(sh(piped)), want), piped


def test_full_takes_no_sizes_as_words_as_pytorch_refuses_them(sh):
    assert sh("torch full '[2,3]' 1.5 | torch value") == "[[1.5,1.5,1.5],[1.5,1.5,1.5]]"
    r = sh.run("torch full 2 3 1.5")
    assert r.code != 0 and r.err.count("\n") == 1 and r.err.startswith("torch: full:")


def test_dash_h_is_help_for_ops(sh):
    for op in ("add", "reshape", "nn.functional.mse_loss"):
        assert sh("torch %s -h" % op) == sh("torch %s --help" % op)
        assert sh("torch %s -h" % op).startswith("usage: torch")


@pytest.mark.parametrize("fast", [False, True], ids=["client", "zsh-function"])
def test_zsh_passes_an_unsplit_word_of_handle_lines_as_those_handles(sh, fast):
    """zsh does not split an unquoted `$b`: the README's loop hands `data next`'s two handles over as one word
    of two lines, which goes where two tensors go; a word with any other line stays one word."""
    zsh = require_tool("zsh")
    x, y = sh.put(torch.arange(3.0)), sh.put(torch.ones(2))
    script = ('m=$(torch nn linear 3 1); o=$(torch optim sgd $m --lr 0.1)\n'
              'L=$(torch data loader $(torch data tensors $(torch randn 8 3) $(torch randn 8 1)) --batch_size 4)\n'
              'b=$(torch data next $L); torch train_step $m $o $b >/dev/null || exit 9\n'
              'xy=$(print -l %s %s); torch value $(torch cat $xy)\n'
              'torch add "$(print -l %s foo)" 1' % (x, y, x))
    p = subprocess.run([zsh, "-f", "-c", ('eval "$(torch init zsh)"\n' if fast else "") + script], env=sh.env,
                       cwd=sh.folder, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert p.stdout == "[0.0,1.0,2.0,1.0,1.0]\n" and p.returncode == 3 and "[bad_handle]" in p.stderr, p.stderr
