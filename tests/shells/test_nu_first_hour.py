"""Issue 11 in Nushell: replies read as JSON, piped input that is no handle, warnings, tables in and out.

In-process PyTorch is the oracle; the bash client is the reference for listings.
"""
import json

import pytest
import torch


def _bash_names(sh, words):
    return [row["name"] for row in json.loads(sh("torch ops %s --json" % words))]


@pytest.mark.parametrize("words", ["", "--search nan", "--search inf", "--search erf"])
def test_ops_listing_and_search_give_the_rows_bash_gives(nu, sh, words):
    # replies are JSON: a summary that says NaN or Infinity (or holds a \u escape) stays text
    rows = nu.json("torch ops %s" % words)
    assert [r["name"] for r in rows] == _bash_names(sh, words)
    assert rows and all(isinstance(r["summary"], str) for r in rows)
    if words == "--search nan":
        assert "isnan" in [r["name"] for r in rows] and any("NaN" in r["summary"] for r in rows)


def test_nonfinite_values_still_come_back_as_floats(nu):
    got = nu("[(torch tensor [NaN inf -inf 1.5] | torch value) (torch tensor [NaN] | torch sum | torch item)] "
             "| each {|v| $v | to nuon } | str join ' ' | print")
    assert got == "[NaN, inf, -inf, 1.5] NaN"


def test_numbers_piped_by_each_are_not_arguments_of_train_step(nu, sh):
    out = json.loads(nu("""
torch manual_seed 0
let x = (torch tensor [[0.0] [1.0] [2.0] [3.0]])
let y = (torch tensor [[1.0] [3.0] [5.0] [7.0]])
let m = (torch nn linear 1 1)
let start = (torch forward $m (torch tensor [[0.0] [1.0]]) | torch value)
let opt = (torch optim sgd $m --lr 0.05)
let losses = (1..200 | each {|i| torch train_step $m $opt $x $y --loss mse_loss })
{start: $start, losses: $losses} | to json --raw | print
"""))
    b, w = out["start"][0][0], out["start"][1][0] - out["start"][0][0]
    model = torch.nn.Linear(1, 1)
    with torch.no_grad():   # the same start: forward at 0 gives the bias, at 1 weight + bias
        model.bias.fill_(b)
        model.weight.fill_(w)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    x, y = torch.tensor([[0.0], [1.0], [2.0], [3.0]]), torch.tensor([[1.0], [3.0], [5.0], [7.0]])
    want = []
    for _ in range(200):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        want.append(loss.item())
    assert len(out["losses"]) == 200
    assert out["losses"] == pytest.approx(want, rel=1e-4, abs=1e-6)


def test_piped_text_and_numbers_are_not_tensor_arguments(nu, sh):
    a_t, b_t = torch.tensor([1.0, 2.0]), torch.tensor([0.5, -1.0])
    a, b = sh.put(a_t), sh.put(b_t)
    out = json.loads(nu("let a = '%s'; let b = '%s'\n"
                        "[(7 | torch add $a $b) ('hello' | torch add $a $b) ([1 2] | torch add $a $b)] "
                        "| to json --raw | print" % (a, b)))
    for h in out:
        assert torch.equal(sh.fetch(h), a_t + b_t)


def test_piped_tensor_reaches_the_model_not_the_model_slot(nu, sh):
    # needs helper A's binder: piped handles fill the leftmost *missing* tensor slot
    x_t = torch.tensor([[1.0, 2.0, 3.0]])
    out = json.loads(nu("""
torch manual_seed 0
let m = (torch nn linear 3 2)
let x = '%s'
[($x | torch forward $m) (torch forward $m $x)] | to json --raw | print
""" % sh.put(x_t)))
    assert torch.equal(sh.fetch(out[0]), sh.fetch(out[1]))


@pytest.mark.parametrize("nu_args,fn", [
    ("reshape [3 2]", lambda t: t.reshape(3, 2)),
    ("unsqueeze 0", lambda t: t.unsqueeze(0)),
    ("permute [1 0]", lambda t: t.permute(1, 0)),
    ("transpose 0 1", lambda t: t.transpose(0, 1)),
    ("flip [0]", lambda t: t.flip([0])),
    ("expand [2 2 3]", lambda t: t.expand(2, 2, 3)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_piped_tensor_fills_the_tensor_slot_of_shape_ops(nu, sh, nu_args, fn):
    # needs helper A's binder: a shape or an int never takes the tensor slot of a piped handle
    t_t = torch.arange(6.0).reshape(2, 3)
    t = sh.put(t_t)
    out = json.loads(nu("let t = '%s'\n[($t | torch %s) (torch %s $t %s)] | to json --raw | print"
                        % (t, nu_args, nu_args.split()[0], " ".join(nu_args.split()[1:]))))
    want = fn(t_t)
    for h in out:
        assert torch.equal(sh.fetch(h), want)


def test_pytorch_warnings_print_one_line_on_stderr_and_the_result_is_unchanged(nu, sh):
    # needs helper A's `"warnings"` in API replies
    r = nu.run("torch mse_loss (torch ones [64 1]) (torch ones [64]) | torch item | print")
    assert r.code == 0 and r.out.strip() == "0.0"
    lines = [line for line in r.err.splitlines() if ": warning: " in line]
    assert len(lines) == 1, r.err
    assert lines[0].startswith("torch: ") and "mse_loss" in lines[0].split(": warning: ")[0]
    assert "target size" in lines[0] and "broadcast" in lines[0]


def test_a_table_piped_into_tensor_is_2d_in_column_order(nu, sh, tmp_path):
    csv = tmp_path / "data.csv"
    csv.write_text("y,x2,x1\n1.5,10,100\n2.5,20,200\n3.5,30,300\n")
    out = json.loads(nu("""
let t = (open '%s' | select x1 x2 | torch tensor)
let l = ([0.5 1.5 2.5] | torch tensor)
let r = ([[a b]; [1 2] [3 4]] | torch tensor)
let row = ({b: 2.5, a: 1} | torch tensor)
[$t $l $r $row] | to json --raw | print
""" % csv))
    assert torch.equal(sh.fetch(out[0]), torch.tensor([[100, 10], [200, 20], [300, 30]]))
    assert torch.equal(sh.fetch(out[1]), torch.tensor([0.5, 1.5, 2.5]))
    assert torch.equal(sh.fetch(out[2]), torch.tensor([[1, 2], [3, 4]]))
    assert torch.equal(sh.fetch(out[3]), torch.tensor([2.5, 1]))


def test_value_table_gives_a_2d_tensor_as_a_table_and_back(nu, sh):
    m_t = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    out = json.loads(nu("""
let m = '%s'
let t = (torch value $m --table)
{t: $t, kind: ($t | describe | str substring 0..4), cols: ($t | columns), back: ($t | torch tensor),
 one: (torch tensor [1.5 2.5] | torch value --table)} | to json --raw | print
""" % sh.put(m_t)))
    assert out["kind"] == "table" and out["cols"] == ["column0", "column1", "column2"]
    assert out["t"] == [{"column0": 1.0, "column1": 2.0, "column2": 3.0}, {"column0": 4.0, "column1": 5.0, "column2": 6.0}]
    assert torch.equal(sh.fetch(out["back"]), m_t)
    assert out["one"] == [{"column0": 1.5}, {"column0": 2.5}]


def test_value_table_refuses_a_3d_tensor(nu):
    r = nu.run("torch zeros [2 2 2] | torch value --table")
    assert r.code != 0 and "--table needs a 1-D or 2-D tensor" in r.err


def test_census_filters_by_bytes_for_every_kind(nu, sh):
    # needs helper C's `bytes` for every kind in GET /v1/tensors
    out = json.loads(nu("""
let big = (torch zeros [1000000])
let small = (torch zeros [2])
let m = (torch nn linear 2 2)
let opt = (torch optim adam $m)
{big: $big, small: $small, hits: (torch tensors | where bytes > 1_000_000 | get handle),
 kinds: (torch tensors | where bytes >= 0 | get kind | uniq | sort)} | to json --raw | print
"""))
    assert out["big"] in out["hits"] and out["small"] not in out["hits"]
    assert {"tensor", "nn", "optim"} <= set(out["kinds"])


def test_typed_commands_are_the_top_level_ops_and_verbs_and_the_rest_run_by_name(nu):
    from torchsh.shells.nushell import NU_KEYWORDS, _API_NAME, typed
    from torchsh.table import build_table
    table = build_table()[0]
    names = set(nu.json("(scope commands | get name) ++ (scope aliases | get name)"))
    ops = [op for name, op in table.ops.items()
           if not name.startswith("_") and name not in NU_KEYWORDS and _API_NAME.match(name)]
    have = {op.name for op in ops if "torch " + op.name.replace(".", " ") in names}
    assert have == {op.name for op in ops if typed(op)}
    assert {"add", "value", "print", "optim.sgd", "nn.info"} <= have   # print: an alias, so nu's print stays usable
    assert {"linalg.qr", "nn.linear", "nn.functional.gelu", "special.erfcx", "fft.rfft"}.isdisjoint(have)


def test_ops_without_a_typed_command_run_by_name_with_the_command_line_grammar(nu, sh):
    a_t = torch.tensor([[1.0, 5.0], [7.0, 2.0]])
    out = json.loads(nu("""
let a = '%s'
torch manual_seed 0
let m = (torch nn linear 2 3 --bias false)
{
  qr: (torch linalg qr $a), gelu: ($a | torch gelu), erfcx: (torch special erfcx $a),
  fft: (torch fft fftn $a --dim [0 1] | torch abs), m: $m, y: (torch forward $m $a), info: (torch nn info $m),
  err: (try { torch linalg det (torch ones [2 3]) } catch {|e| {msg: $e.msg, code: $e.details.code} }),
  help: (torch special erfcx --help | describe), ignored: (7 | torch special erfcx $a)
} | to json --raw | print
""" % sh.put(a_t)))
    q, r = torch.linalg.qr(a_t)
    assert torch.equal(sh.fetch(out["qr"]["Q"]), q) and torch.equal(sh.fetch(out["qr"]["R"]), r)
    assert torch.equal(sh.fetch(out["gelu"]), torch.nn.functional.gelu(a_t))
    assert torch.equal(sh.fetch(out["erfcx"]), torch.special.erfcx(a_t))
    assert torch.equal(sh.fetch(out["ignored"]), torch.special.erfcx(a_t))
    assert torch.equal(sh.fetch(out["fft"]), torch.fft.fftn(a_t, dim=[0, 1]).abs())
    assert out["m"].startswith("nn://") and out["info"]["parameters"] == 6
    assert sh.fetch(out["y"]).shape == (2, 3)
    assert out["err"]["msg"].startswith("torch linalg.det: ") and out["err"]["code"] == "torchsh::shape_mismatch"
    assert out["help"] == "string"


def test_help_shows_flags_types_and_the_positional_tensors_in_the_signatures(nu):
    out = nu("help torch add | print")
    assert "torch.add(Tensor input, Tensor other, *, Scalar alpha=1)" in out
    assert "--alpha <number>" in out and "--no_grad" in out
    assert "--input" not in out   # required by position in every signature: no flag
    assert "--dtype <string>" in nu("help torch sum | print")
    assert "--table" in nu("help torch value | print")


def test_inference_mode_is_a_block_in_nu(nu):
    out = nu("let w = (torch ones [2] --requires_grad)\n"
             "[(torch inference_mode { torch mul $w 2 | torch requires_grad }) (torch mul $w 2 | torch requires_grad)]"
             " | to json --raw | print")
    assert json.loads(out) == [False, True]


def test_external_transport_reads_ops_search_as_json_and_values_as_floats(nu, sh, tmp_path):
    path = tmp_path / "torch.nu"
    path.write_text(sh("torch nu-module --transport external") + "\n")
    out = json.loads(nu("{names: (torch ops --search nan | get name), v: (torch tensor [NaN 2.0] | torch value | to nuon),"
                        " piped: (7 | torch ones [2] | torch value)} | to json --raw | print", module=str(path)))
    assert out["names"] == _bash_names(sh, "--search nan")
    assert out["v"] == "[NaN, 2.0]" and out["piped"] == [1.0, 1.0]


def test_handle_lines_from_the_external_client_fill_variadic_slots(nu, sh):
    out = nu("^torch chunk (^torch arange 6) 3 | torch cat | to json --raw | print")
    assert torch.equal(sh.fetch(json.loads(out)), torch.arange(6))
