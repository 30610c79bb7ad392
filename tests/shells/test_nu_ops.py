"""torch.nu against the daemon: the issue's examples, dual input, native data, errors, block forms.

In-process PyTorch is the oracle: handles made in nu are fetched bit for bit with `sh.fetch`.
"""
import json
import math

import pytest
import torch


def test_autograd_example_from_the_issue(nu, sh):
    out = json.loads(nu("""
let w = (torch randn [3] --requires_grad)
let loss = (torch mul $w $w | torch sum)
torch backward $loss
let g = (torch grad $w | torch value)
torch zero_grad $w
let d = (torch detach $w)
{w: $w, g: $g, g_type: ($g | describe), d: $d, zeroed: (torch grad $w | torch value)} | to json --raw | print
"""))
    w = sh.fetch(out["w"])
    assert out["g_type"] == "list<float>"
    assert torch.equal(torch.tensor(out["g"], dtype=torch.float32), 2 * w.detach())
    assert out["zeroed"] == [0.0, 0.0, 0.0]
    d = sh.fetch(out["d"])
    assert torch.equal(d, w.detach()) and not d.requires_grad


@pytest.mark.slow
def test_training_loop_from_the_nn_issue_reaches_loss_below_1e_3(nu):
    out = nu("""
torch manual_seed 42
let x = (torch tensor [[0.0] [1.0] [2.0] [3.0]])
let y = (torch tensor [[1.0] [3.0] [5.0] [7.0]])
let model = (torch nn linear 1 1)
let opt = (torch optim sgd $model --lr 0.05 --momentum 0.9)
let before = (torch tensors | length)
for i in 1..200 {
    torch scope { torch zero_grad $opt; torch forward $model $x | torch mse_loss $y | torch backward; torch step $opt }
}
let after = (torch tensors | length)
let loss = (torch no_grad { torch forward $model $x | torch mse_loss $y | torch item })
{loss: $loss, flat: ($after == $before)} | to json --raw | print
""")
    got = json.loads(out)
    assert got["loss"] < 1e-3 and got["flat"]


# (op, nu argument text after the piped/first tensor, torch function) for dual input: both
# `torch OP $a ARGS` and `$a | torch OP ARGS` must equal PyTorch.
DUAL = [
    ("add", "$b", lambda a, b: torch.add(a, b)),
    ("add", "$b --alpha 3", lambda a, b: torch.add(a, b, alpha=3)),
    ("sub", "2", lambda a, b: torch.sub(a, 2)),
    ("mul", "$b", lambda a, b: a * b),
    ("div", "$b --rounding_mode floor", lambda a, b: torch.div(a, b, rounding_mode="floor")),
    ("matmul", "$b", lambda a, b: a @ b),
    ("maximum", "$b", lambda a, b: torch.maximum(a, b)),
    ("pow", "2", lambda a, b: torch.pow(a, 2)),
    ("sum", "--dim 1 --keepdim", lambda a, b: a.sum(1, keepdim=True)),
    ("mean", "--dim [0 1]", lambda a, b: a.mean([0, 1])),
    ("transpose", "0 1", lambda a, b: a.transpose(0, 1)),
    ("reshape", "[4]", lambda a, b: a.reshape(4)),
    ("clamp", "--min 0", lambda a, b: a.clamp(min=0)),
    ("softmax", "--dim 0", lambda a, b: torch.softmax(a, 0)),
    ("mse_loss", "$b", lambda a, b: torch.nn.functional.mse_loss(a, b)),
    ("linalg.matrix_norm", "", lambda a, b: torch.linalg.matrix_norm(a)),
    ("gelu", "", lambda a, b: torch.nn.functional.gelu(a)),
]


@pytest.mark.parametrize("op,args,fn", DUAL, ids=["%s %s" % (o, a) for o, a, _ in DUAL])
def test_dual_input_argument_and_pipe_agree_with_pytorch(nu, sh, op, args, fn):
    a_t, b_t = torch.tensor([[1.5, -2.0], [3.0, 0.25]]), torch.tensor([[0.5, 4.0], [-1.0, 2.0]])
    a, b = sh.put(a_t), sh.put(b_t)
    words = op.replace(".", " ")
    out = json.loads(nu("let a = '%s'; let b = '%s'\n[(torch %s $a %s) ($a | torch %s %s)] | to json --raw | print"
                        % (a, b, words, args, words, args)))
    want = fn(a_t, b_t)
    for h in out:
        assert torch.equal(sh.fetch(h), want), (op, args)


def test_piped_list_fills_variadic_ops(nu, sh):
    a, b = sh.put(torch.tensor([[1.0, 2.0]])), sh.put(torch.tensor([[3.0, 4.0]]))
    out = json.loads(nu("let a = '%s'; let b = '%s'\n"
                        "[([$a $b] | torch cat --dim 0) ([$a $b] | torch stack) ($a | torch cat $b --dim 1)] "
                        "| to json --raw | print" % (a, b)))
    at, bt = sh.fetch(a), sh.fetch(b)
    assert torch.equal(sh.fetch(out[0]), torch.cat([at, bt], 0))
    assert torch.equal(sh.fetch(out[1]), torch.stack([at, bt]))
    assert torch.equal(sh.fetch(out[2]), torch.cat([at, bt], 1))


def test_native_lists_make_tensors_with_pytorch_dtype_inference(nu, sh):
    out = json.loads(nu("[(torch tensor [[1 2] [3 4]]) (torch tensor [0.5 1.0]) (torch full [2 3] 7) "
                        "(torch full [2] 0.5 --dtype float64) ([[1 2] [3 4]] | torch tensor)] | to json --raw | print"))
    assert torch.equal(sh.fetch(out[0]), torch.tensor([[1, 2], [3, 4]]))
    assert torch.equal(sh.fetch(out[1]), torch.tensor([0.5, 1.0]))
    assert torch.equal(sh.fetch(out[2]), torch.full([2, 3], 7))
    assert torch.equal(sh.fetch(out[3]), torch.full([2], 0.5, dtype=torch.float64))
    assert torch.equal(sh.fetch(out[4]), torch.tensor([[1, 2], [3, 4]]))


def test_value_gives_nested_lists_and_shape_a_list_of_ints(nu):
    out = json.loads(nu("let t = (torch tensor [[0.1 2.5] [3.0 4.0]])\n"
                        "{v: (torch value $t), vt: (torch value $t | describe), s: (torch shape $t), "
                        "st: (torch shape $t | describe), i: (torch tensor [[1 2]] | torch value | describe)} "
                        "| to json --raw | print"))
    assert out["v"] == [[0.1, 2.5], [3.0, 4.0]] and out["vt"] == "list<list<float>>"
    assert out["s"] == [2, 2] and out["st"] == "list<int>" and out["i"] == "list<list<int>>"


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_nan_and_infinities_round_trip_as_real_floats(nu, sh, dtype):
    out = nu("""
let v = [1.5 NaN inf -inf -0.0 1e-3]
let t = (torch tensor $v --dtype %s)
let back = (torch value $t)
let kinds = ($back | each {|x| $x | describe } | uniq)
let texts = ($back | each {|x| $x | into string })
let again = (torch tensor $back --dtype %s)
{h: $t, again: $again, kinds: $kinds, texts: $texts} | to json --raw | print
""" % (dtype, dtype))
    got = json.loads(out)
    assert got["kinds"] == ["float"]
    assert got["texts"][1:4] == ["NaN", "inf", "-inf"]
    want = torch.tensor([1.5, math.nan, math.inf, -math.inf, -0.0, 1e-3], dtype=getattr(torch, dtype))
    for h in (got["h"], got["again"]):
        t = sh.fetch(h)
        assert t.dtype == want.dtype
        assert torch.equal(t.isnan(), want.isnan()) and torch.equal(t[~t.isnan()], want[~want.isnan()])
        assert torch.equal(t.signbit(), want.signbit())


def test_nonfinite_scalars_reach_ops(nu, sh):
    out = json.loads(nu("[(torch full [2] NaN) (torch full [1] (-inf))] | to json --raw | print"))
    assert sh.fetch(out[0]).isnan().all() and sh.fetch(out[1]).item() == -math.inf


def test_tables_and_records_for_objects_ops_status_and_modules(nu):
    out = json.loads(nu("""
let t = (torch ones [2 3])
let m = (torch nn linear 3 2)
let census = (torch tensors)
{
  census_type: ($census | describe | str substring 0..4),
  row: ($census | where handle == $t | get 0 | select kind shape dtype),
  ops: (torch ops --search erfcx | get name),
  status: (torch daemon status | describe | str substring 0..5),
  pid: (torch daemon status | get pid | describe),
  info: (torch nn info $m | select kind parameters)
} | to json --raw | print
"""))
    assert out["census_type"] == "table"
    assert out["row"] == {"kind": "tensor", "shape": [2, 3], "dtype": "float32"}
    assert "special.erfcx" in out["ops"]
    assert out["status"] == "record" and out["pid"] == "int"
    assert out["info"] == {"kind": "Linear", "parameters": 8}


def test_multi_output_ops_give_records_with_pytorch_field_names(nu, sh):
    a = torch.tensor([[1.0, 5.0], [7.0, 2.0]])
    out = json.loads(nu("torch max '%s' --dim 1 | to json --raw | print" % sh.put(a)))
    want = a.max(dim=1)
    assert torch.equal(sh.fetch(out["values"]), want.values) and torch.equal(sh.fetch(out["indices"]), want.indices)


def test_errors_are_nu_errors_that_try_catch_handles(nu):
    out = json.loads(nu("""
let a = (torch ones [2 3])
let shape = (try { torch add $a (torch ones [4]); "no error" } catch {|e| {msg: $e.msg, code: $e.details.code} })
let handle = (try { torch value "tensor://zz999999" } catch {|e| $e.details.code })
let kind = (try { torch add $a "hello" } catch {|e| $e.msg })
{shape: $shape, handle: $handle, kind: $kind} | to json --raw | print
"""))
    assert out["shape"]["msg"].startswith("torch add: ") and "[2,3]" in out["shape"]["msg"]
    assert out["shape"]["code"] == "torchsh::shape_mismatch"
    assert out["handle"] in ("torchsh::unknown_handle", "torchsh::stale_handle", "torchsh::bad_handle")
    assert out["kind"].startswith("torch add: ")


def test_unknown_flags_are_refused_by_nu_before_anything_runs(nu):
    r = nu.run("torch ones [2] | torch sum --bogus 1")
    assert r.code != 0 and "doesn't have flag" in r.err and "bogus" in r.err


def test_an_uncaught_error_fails_the_script_with_the_op_and_message(nu):
    r = nu.run("torch add (torch ones [2 3]) (torch ones [4])")
    assert r.code != 0 and "torch add: " in r.err and "broadcast" in r.err


def test_scope_block_frees_what_it_made_even_when_it_fails(nu):
    out = json.loads(nu("""
let before = (torch tensors | length)
let v = (torch scope { torch ones [3] | torch sum | torch item })
let kept = (torch scope { let t = (torch ones [2]); torch keep $t; $t })
try { torch scope { torch ones [5]; error make {msg: "boom"} } } catch { }
{v: $v, grew: ((torch tensors | length) - $before), kept: (torch value $kept)} | to json --raw | print
"""))
    assert out == {"v": 3.0, "grew": 1, "kept": [1.0, 1.0]}


def test_no_grad_block_and_flag_and_environment(nu):
    out = json.loads(nu("""
let w = (torch ones [2] --requires_grad)
[
  (torch mul $w 2 | torch requires_grad)
  (torch no_grad { torch mul $w 2 | torch requires_grad })
  (torch mul $w 2 --no_grad | torch requires_grad)
  (with-env {TORCHSH_NO_GRAD: "1"} { torch mul $w 2 | torch requires_grad })
  (torch no_grad { torch enable_grad { torch mul $w 2 | torch requires_grad } })
] | to json --raw | print
"""))
    assert out == [True, False, False, False, True]
