"""A session folder written by an earlier torchsh (old_session/, from held_objects() at commit fe1dffc) loads
into today's daemon: every object comes back under its handle, kind and scope, with exactly the values the
file holds, and equal to the same objects built today (values, a model's forward, an optimizer's and a
scheduler's next step from the same values, a loader's next batches, a distribution's parameters); a held
parameter is the model's own, and a graph comes back detached.

held_objects() builds them as the verbs do, from arange values and seeded steps; what its matmuls compute
depends on the CPU's kernels, so those values are compared with the stored bytes, not with a rebuild (the
test's docstring says which is which); `python tests/unit/session/test_old_sessions.py DIR` writes DIR/session.safetensors and handles.json
with the code it runs in (how old_session/ was made)."""
import json
import os
import sys
from types import SimpleNamespace

import torch
from safetensors import safe_open

from torchsh.recipes.base import STATE_JSON
from torchsh.registry.store import Registry
from torchsh.session import recipe, transfer
from torchsh.table.signature import class_args
from torchsh.verbs import data as data_verbs, loader as loader_verbs, nn as nn_verbs, sched as sched_verbs

FIXTURE = os.path.join(os.path.dirname(__file__), "old_session")


def held_objects(registry, folder):
    """{name: handle} of one object of every kind a session saves, held in registry (folder: for a csv)."""
    ctx = SimpleNamespace(device=None, registry=registry)
    layers = [nn_verbs.construct(ctx, cls, values) for cls, values in (
        (torch.nn.Linear, {"in_features": 3, "out_features": 4}), (torch.nn.BatchNorm1d, {"num_features": 4}),
        (torch.nn.Linear, {"in_features": 4, "out_features": 2}))]
    first, *inline = [registry.put(m, "nn") for m in layers]
    model = nn_verbs.sequential(ctx, modules=[first] + inline)
    registry.free(inline)  # not held: written inside the model's recipe
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.arange(p.numel(), dtype=p.dtype).reshape(p.shape) / (7 + i) - 1)
    model[2].bias.requires_grad_(False)
    x, y = torch.arange(24.0).reshape(8, 3) / 5, torch.arange(16.0).reshape(8, 2) % 3
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sched = sched_verbs._builder(torch.optim.lr_scheduler.StepLR, class_args(torch.optim.lr_scheduler.StepLR))(
        ctx, optimizer=opt, step_size=1, gamma=0.5)
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    sched.step()
    model[1].eval()
    t = torch.arange(3.0, requires_grad=True)
    (t * t).sum().backward()
    with open(os.path.join(folder, "xy.csv"), "w") as f:
        f.write("a,b,c\n1,2,0\n3,4,1\n5,6,0\n")
    part = data_verbs.split(ctx, loader_verbs.tensors(ctx, [x, torch.arange(8)]), 0.75, 0.25, seed=1)[0]
    normalized = data_verbs.transform(ctx, part, mean=[0.5], std=[2.0])
    loader = loader_verbs.loader(ctx, normalized, batch_size=2, shuffle=True, seed=3)
    loader.next_batch()
    scope = registry.begin_scope()
    objects = {"x": (x, "tensor"), "model": (model, "nn"), "weight": (model[0].weight, "tensor"),
               "opt": (opt, "optim"), "sched": (sched, "sched"), "t": (t, "tensor"), "graph": (t * 2, "tensor"),
               "complex": (torch.complex(torch.arange(3.0), -torch.arange(3.0)), "tensor"),
               "csv": (data_verbs.open_(ctx, [os.path.join(folder, "xy.csv")], target="c"), "data"),
               "part": (part, "data"), "normalized": (normalized, "data"), "loader": (loader, "loader"),
               "normal": (torch.distributions.Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0])), "dist")}
    names = {"first": first, **{n: registry.put(obj, kind) for n, (obj, kind) in objects.items()}}
    names["scoped"] = registry.put(torch.ones(2), "tensor", scope)
    os.remove(os.path.join(folder, "xy.csv"))  # its columns are held in memory: the session has their values
    return names


def _old():
    fresh = Registry()
    with open(os.path.join(FIXTURE, "handles.json")) as f:
        names = json.load(f)
    handles, manifest = transfer.hold(fresh, transfer.read_folder(FIXTURE), True)
    return fresh, names, manifest


def _today(tmp_path):
    registry = Registry()
    return registry, held_objects(registry, str(tmp_path))


def test_an_old_session_comes_back_whole_under_its_handles_kinds_and_scopes(tmp_path):
    old, names, manifest = _old()
    today, new = _today(tmp_path)
    assert manifest["skipped"] == [] and set(names) == set(new)
    for name, handle in names.items():
        assert old.entry(handle).kind == today.entry(new[name]).kind, name
    assert old.entry(names["scoped"]).scope is not None and old.entry(names["x"]).scope is None
    assert old.get(names["weight"], "tensor") is old.get(names["model"], "nn")[0].weight
    assert old.get(names["first"], "nn") is old.get(names["model"], "nn")[0]


def _stored():
    """{handle: {key: tensor}} as the fixture's file holds them, read by safetensors itself (not by torchsh)."""
    stored = {}
    with safe_open(os.path.join(FIXTURE, "session.safetensors"), framework="pt") as f:
        for key in f.keys():
            handle, _, name = key.partition("|")
            t = f.get_tensor(key)
            stored.setdefault(handle, {})[name.removesuffix("#complex")] = \
                torch.view_as_complex(t) if name.endswith("#complex") else t
    return stored


def _same(key, a, b):
    if key == STATE_JSON:  # a JSON state (recipes/base.json_state): the same JSON, however it is spaced
        return json.loads(bytes(a.tolist())) == json.loads(bytes(b.tolist()))
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)


def test_an_old_sessions_values_are_the_stored_ones_bit_for_bit():
    """Every object loaded gives back, as its state, exactly the tensors the old file holds for it: the format
    is read as it was written, whatever CPU wrote the values (they are bytes in the file)."""
    old, _, manifest = _old()
    stored, refs = _stored(), {h: e.obj for h, e in old.items()}
    for row in manifest["objects"]:
        if "alias" not in row:
            values = recipe.state_tensors(refs[row["handle"]], refs)
            want = stored.get(row["handle"], {})
            assert values.keys() == want.keys(), row["handle"]
            assert all(_same(k, values[k], want[k]) for k in want), row["handle"]


def test_an_old_sessions_values_equal_the_same_objects_built_today(tmp_path):
    """What held_objects() makes with elementwise IEEE-754 arithmetic (arange, division by small integers,
    complex, a seeded shuffle) is the same bits on any CPU: compared with today's build directly. A model's
    grads and its optimizer's state come from matmul and BatchNorm reductions, whose summation order is the
    CPU's kernels' (the fixture's grads differ from this machine's by 1e-4, and a bias before BatchNorm, whose
    true gradient is 0, gets Adam steps of either sign from that noise): today's model, optimizer and scheduler
    are given the old session's stored values, and then both take the same step here, bit for bit."""
    old, names, _ = _old()
    today, new = _today(tmp_path)
    get = lambda name, kind: (old.get(names[name], kind), today.get(new[name], kind))  # noqa: E731
    for name in ("x", "t", "complex", "scoped"):
        a, b = get(name, "tensor")
        assert torch.equal(a, b) and a.requires_grad == b.requires_grad, name
    assert torch.equal(get("t", "tensor")[0].grad, torch.arange(3.0) * 2)
    graph = old.get(names["graph"], "tensor")
    assert graph.grad_fn is None and not graph.requires_grad and torch.equal(graph, torch.arange(3.0) * 2)
    (m, m2), (o, o2), (s, s2) = get("model", "nn"), get("opt", "optim"), get("sched", "sched")
    assert not m[1].training and not m[2].bias.requires_grad
    stored = _stored()
    for name, obj in (("model", m2), ("opt", o2), ("sched", s2)):
        recipe.load_state(obj, stored[names[name]])
    x = torch.arange(12.0).reshape(4, 3) / 3
    for model, opt, sched in ((m, o, s), (m2, o2, s2)):
        model(x).sum().backward()
        opt.step()
        sched.step()
    assert torch.equal(m(x), m2(x)) and s.get_last_lr() == s2.get_last_lr()
    assert all(torch.equal(p.grad, q.grad) for p, q in zip(m.parameters(), m2.parameters()) if p.grad is not None)
    for name in ("csv", "part", "normalized"):
        a, b = get(name, "data")
        assert len(a) == len(b) and all(torch.equal(u, v) for i in range(len(a)) for u, v in zip(a[i], b[i])), name
    (l1, l2), (d1, d2) = get("loader", "loader"), get("normal", "dist")
    for _ in range(4):  # the epoch's last two batches, its end, the next epoch's first
        a, b = l1.next_batch(), l2.next_batch()
        assert (a is None) == (b is None) and all(torch.equal(u, v) for u, v in zip(a or (), b or ()))
    assert torch.equal(d1.loc, d2.loc) and torch.equal(d1.scale, d2.scale)


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    registry = Registry()
    handles = held_objects(registry, out)
    transfer.save_folder(registry, out)
    with open(os.path.join(out, "handles.json"), "w") as f:
        json.dump(handles, f, indent=1, sort_keys=True)
