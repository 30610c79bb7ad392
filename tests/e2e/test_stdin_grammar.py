"""The stdin grammar: given words bind by kind first, then stdin fills the tensor slot still open;
`-` marks the slot explicitly; a variadic op given its tensors leaves stdin alone. Against PyTorch."""

import pytest
import torch
from support.apicall import post
from support.required import require_tool

X = torch.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])

# (words after the op, what in-process PyTorch gives on X), for the ops the issue lists
SHAPE_OPS = {
    "reshape '[3,2]'": lambda t: t.reshape(3, 2),
    "unsqueeze 0": lambda t: t.unsqueeze(0),
    "permute '[1,0]'": lambda t: t.permute(1, 0),
    "transpose 0 1": lambda t: t.transpose(0, 1),
    "topk 2": lambda t: torch.topk(t, 2),
    "split 2": lambda t: torch.split(t, 2),
    "chunk 2": lambda t: torch.chunk(t, 2),
    "narrow 0 0 1": lambda t: torch.narrow(t, 0, 0, 1),
    "flip '[0]'": lambda t: torch.flip(t, [0]),
    "roll 1": lambda t: torch.roll(t, 1),
    "repeat '[2,1]'": lambda t: t.repeat(2, 1),
    "movedim 0 1": lambda t: torch.movedim(t, 0, 1),
    "full_like 3.0": lambda t: torch.full_like(t, 3.0),
    "repeat_interleave 2": lambda t: torch.repeat_interleave(t, 2),
    "expand '[2,2,3]'": lambda t: t.expand(2, 2, 3),
}


def tensors_of(sh, out):
    return [sh.fetch(h) for h in out.split()]


def flat(result):
    return [result] if isinstance(result, torch.Tensor) else list(result)


@pytest.mark.parametrize("words", list(SHAPE_OPS))
def test_piped_tensor_fills_the_tensor_slot_not_the_shape_slot(sh, words):
    x = sh.put(X)
    op, _, rest = words.partition(" ")
    want = flat(SHAPE_OPS[words](X))
    forms = {"arguments": "torch %s %s %s" % (op, x, rest),
             "piped": "echo %s | torch %s" % (x, words),
             "dash": "echo %s | torch %s - %s" % (x, op, rest)}
    for form, script in forms.items():
        got = tensors_of(sh, sh(script))
        assert len(got) == len(want), form
        assert all(torch.equal(g, w) for g, w in zip(got, want)), form


def test_piped_input_runs_the_model_given_as_an_argument(sh):
    m = sh("torch manual_seed 0 >/dev/null; torch nn linear 3 2")
    x = sh.put(X)
    piped = sh.fetch(sh("echo %s | torch forward %s" % (x, m)))
    assert torch.equal(piped, sh.fetch(sh("torch forward %s %s" % (m, x))))
    torch.manual_seed(0)
    assert torch.allclose(piped, torch.nn.Linear(3, 2)(X), rtol=0, atol=1e-6)


def test_a_handle_of_the_wrong_kind_still_names_the_mix_up(sh):
    m = sh("torch nn linear 3 2")
    r = sh.run("torch add %s 1" % m)
    assert r.code != 0 and "[wrong_kind]" in r.err


def test_dash_marks_where_the_piped_handle_goes_in_a_variadic_op(sh):
    a, b, c = sh.put(X), sh.put(X + 10), sh.put(X * 2)
    assert torch.equal(sh.fetch(sh("echo %s | torch cat - %s" % (a, b))), torch.cat([X, X + 10]))
    assert torch.equal(sh.fetch(sh("echo %s | torch cat %s -" % (a, b))), torch.cat([X + 10, X]))
    assert torch.equal(sh.fetch(sh("echo %s | torch stack %s - %s" % (b, a, c))), torch.stack([X, X + 10, X * 2]))


def test_each_dash_reads_exactly_one_line_and_leaves_the_rest(sh):
    hs = [sh.put(X + i) for i in range(3)]
    out = sh("torch cat - - | torch shape; cat", stdin="\n".join(hs) + "\n").split("\n")
    assert out == ["[4,3]", hs[2]]


def test_dash_in_a_handle_list_flag(sh):
    a, b = sh.put(X), sh.put(X + 1)
    assert torch.equal(sh.fetch(sh("echo %s | torch cat --tensors %s -" % (a, b))), torch.cat([X + 1, X]))


def test_two_dashes_take_the_lines_in_order(sh):
    a, b = sh.put(X), sh.put(X + 1)
    got = sh.fetch(sh("printf '%s\\n%s\\n' | torch sub - -" % (a, b)))
    assert torch.equal(got, X - (X + 1))


def test_too_few_lines_for_the_dashes_is_one_line_error(sh):
    a = sh.put(X)
    r = sh.run("echo %s | torch sub - -" % a)
    assert r.code != 0 and r.err.count("\n") == 1 and "[missing_argument]" in r.err


def test_variadic_op_given_its_tensors_leaves_stdin_to_the_while_loop(sh):
    hs = [sh.put(X + i) for i in range(3)]
    u = sh.put(X)
    out = sh("while read h; do torch cat $h %s | torch shape; done" % u, stdin="\n".join(hs) + "\n")
    assert out.split("\n") == ["[4,3]"] * 3


def test_words_alone_run_when_stdin_is_empty(sh):
    """`repeat_interleave '[1,2]'` could take a piped tensor; with nothing piped it is PyTorch's one-tensor form."""
    got = sh.fetch(sh("torch repeat_interleave '[1,2]'"))  # stdin is /dev/null here
    assert torch.equal(got, torch.repeat_interleave(torch.tensor([1, 2])))


def test_piped_int_ops_are_the_tensor_method_with_that_int(sh):
    x = sh.put(X)
    assert torch.equal(sh.fetch(sh("echo %s | torch sum 1" % x)), X.sum(1))
    assert torch.equal(sh.fetch(sh("echo %s | torch add 2" % x)), X + 2)


def test_api_tensors_fill_the_slot_the_args_left_open(sh):
    """Nushell's `$x | torch forward $m` sends {"tensors": [x], "args": [m]}."""
    m = sh("torch nn linear 3 2")
    x = sh.put(X)
    status, out = post(sh, "forward", {"tensors": [x], "args": [m]})
    assert status == 200, out
    assert torch.equal(sh.fetch(out["result"]), sh.fetch(sh("torch forward %s %s" % (m, x))))
    status, out = post(sh, "reshape", {"tensors": [x], "args": [[3, 2]]})
    assert status == 200 and torch.equal(sh.fetch(out["result"]), X.reshape(3, 2))


def test_api_tensors_go_before_given_tensors_of_a_variadic_slot(sh):
    a, b = sh.put(X), sh.put(X + 1)
    status, out = post(sh, "cat", {"tensors": [a], "args": [b]})
    assert status == 200 and torch.equal(sh.fetch(out["result"]), torch.cat([X, X + 1]))


def test_api_dash_in_args_takes_the_next_piped_tensor_there(sh):
    """Nushell's `$t | torch cat - $u` sends {"tensors": [t], "args": ["-", u]}."""
    a, b = sh.put(X), sh.put(X + 1)
    status, out = post(sh, "cat", {"tensors": [b], "args": [a, "-"]})
    assert status == 200 and torch.equal(sh.fetch(out["result"]), torch.cat([X, X + 1]))
    status, out = post(sh, "cat", {"tensors": [], "args": [a, "-"]})
    assert status >= 400 and out["error"]["code"] == "missing_argument"


def test_zsh_fast_path_reads_one_line_per_dash_and_pipes_into_open_slots(sh):
    require_tool("zsh")
    hs = [sh.put(X + i) for i in range(3)]
    script = "zsh -fc 'eval \"$(torch init zsh)\"; torch cat - - | torch shape; cat'"
    assert sh(script, stdin="\n".join(hs) + "\n").split("\n") == ["[4,3]", hs[2]]
    script = "echo %s | zsh -fc 'eval \"$(torch init zsh)\"; torch reshape 3 2 | torch shape'" % hs[0]
    assert sh(script) == "[3,2]"
