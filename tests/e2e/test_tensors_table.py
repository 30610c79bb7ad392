"""`torch tensors`: an aligned table with a header like `docker ps`, `-q` for handles only, `--json` rows
where every kind has `bytes` (an optimizer's state, a model's parameters and buffers). Issue 11 §5."""
import json
import re

import torch

from support.apicall import call

COLUMNS = ["HANDLE", "KIND", "SHAPE", "DTYPE", "DEVICE", "BYTES", "GRAD", "AGE", "SCOPE", "NAMES"]


def objects(sh, scope_id=None):
    """A tensor, a model with buffers (BatchNorm), an Adam optimizer after one step, a scheduler."""
    x, y = sh("torch randn '[8,3]'"), sh("torch randn '[8,3]'")
    m = sh("torch nn batch_norm1d 3")
    opt = sh("torch optim adam %s --lr 0.1" % m)
    sh("torch train_step %s %s %s %s --loss mse_loss" % (m, opt, x, y))
    sched = sh("torch sched.step_lr %s --step_size 2" % opt)
    return x, m, opt, sched


def expected_bytes():
    """The same objects in process: Adam's state after one step; parameters plus running stats."""
    torch.manual_seed(0)
    m = torch.nn.BatchNorm1d(3)
    opt = torch.optim.Adam(m.parameters(), lr=0.1)
    torch.nn.functional.mse_loss(m(torch.randn(8, 3)), torch.randn(8, 3)).backward()
    opt.step()
    state = sum(v.nelement() * v.element_size() for s in opt.state.values() for v in s.values()
                if isinstance(v, torch.Tensor))
    model = sum(t.nelement() * t.element_size() for t in list(m.parameters()) + list(m.buffers()))
    return model, state


def test_census_json_has_integer_bytes_for_every_kind(sh):
    x, m, opt, sched = objects(sh)
    rows = {r["handle"]: r for r in json.loads(sh("torch tensors --json"))}
    model, state = expected_bytes()
    assert rows[x]["bytes"] == 8 * 3 * 4
    assert rows[m]["bytes"] == model and model > 0
    assert rows[opt]["bytes"] == state and state > 0
    assert rows[sched]["bytes"] == 0
    assert all(type(r["bytes"]) is int for r in rows.values())
    # the JSON API's census has the same ints
    status, text = call(sh, "GET", "/v1/tensors")
    api_rows = {r["handle"]: r for r in json.loads(text)["objects"]}
    assert status == 200 and {h: api_rows[h]["bytes"] for h in rows} == {h: rows[h]["bytes"] for h in rows}


def test_census_json_keeps_its_fields(sh):
    x = sh("torch zeros '[2,5]'")
    row = next(r for r in json.loads(sh("torch tensors --json")) if r["handle"] == x)
    assert set(row) == {"handle", "kind", "age_s", "scope", "shape", "dtype", "device", "bytes", "requires_grad", "names"}


def test_table_has_a_header_and_aligned_columns(sh):
    x, m, opt, sched = objects(sh)
    lines = sh("torch tensors").split("\n")
    assert lines[0].split() == COLUMNS
    starts = [m_.start() for m_ in re.finditer(r"\S+", lines[0])]
    rows = {}
    for line in lines[1:]:
        cells = line.split()
        assert len(cells) == len(COLUMNS), line
        assert [m_.start() for m_ in re.finditer(r"\S+", line)] == starts, line  # every cell under its heading
        rows[cells[0]] = dict(zip(COLUMNS, cells))
    assert rows[x]["KIND"] == "tensor" and rows[x]["SHAPE"] == "[8,3]" and rows[x]["DTYPE"] == "float32"
    assert rows[x]["BYTES"] == "96B" and rows[x]["GRAD"] == "no" and rows[x]["SCOPE"] == "-"
    assert rows[m]["KIND"] == "nn" and rows[m]["SHAPE"] == "BatchNorm1d"
    assert rows[opt]["KIND"] == "optim" and rows[opt]["SHAPE"] == "Adam" and rows[opt]["BYTES"] != "0B"
    assert rows[sched]["KIND"] == "sched" and rows[sched]["SHAPE"] == "StepLR"


def test_table_names_the_scope_and_kind_filter(sh):
    out = sh("torch scope -- bash -c 'torch ones \"[2]\" >/dev/null; torch tensors --kind tensor'")
    lines = out.split("\n")
    assert lines[0].split() == COLUMNS
    scoped = [line.split() for line in lines[1:] if line.split()[COLUMNS.index("SCOPE")] != "-"]
    assert scoped and all(cells[1] == "tensor" for cells in scoped)


def test_quiet_prints_handles_only(sh):
    objects(sh)
    handles = sh("torch tensors -q").split("\n")
    assert handles == [r["handle"] for r in json.loads(sh("torch tensors --json"))]
    assert sh("torch tensors --quiet --kind optim").split("\n") == \
        [r["handle"] for r in json.loads(sh("torch tensors --json --kind optim"))]
