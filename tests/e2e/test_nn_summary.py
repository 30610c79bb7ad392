"""`torch nn summary` against torchinfo (the test extra) as the oracle: rows (kind, depth, depth-idx, output
shape), each row's Param # cell and the totals lines, on five torchvision classifiers and on a small net
that holds torchinfo's odd cases (a frozen layer, a module called twice, a ModuleList whose members run
apart, an LSTM's tuple output, rows deeper than the shown depth)."""
import json
import textwrap

import pytest
import torchinfo

from conftest import own_daemon
from support.usernets import python_net, write_net

# torchvision's classifiers through `model open FILE.py:CLASS`, importable even where torchvision's C
# extension does not load (this image's torchvision is a CUDA build beside a CPU torch, so
# `torch model open torchvision:NAME` refuses here): only its import touches the C ops, to register their
# fake kernels, and the classifiers never call them. Vision(name) IS torchvision.models.get_model(name).
VISION = textwrap.dedent('''
    import torch
    import torch.library

    _register_fake = torch.library.register_fake
    torch.library.register_fake = lambda *args, **kwargs: (lambda fn: fn)
    try:
        import torchvision
    finally:
        torch.library.register_fake = _register_fake

    class Vision(torch.nn.Module):
        def __new__(cls, name):
            return torchvision.models.get_model(name, weights=None)
''')

ODD = textwrap.dedent('''
    import torch
    from torch import nn

    class Inner(nn.Module):  # a parameter of its own beside children, and rows down to depth 5
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(8))
            self.deep = nn.Sequential(nn.Sequential(nn.Linear(8, 8), nn.ReLU()), nn.LayerNorm(8))

        def forward(self, x):
            return self.deep(x) * self.scale

    class Net(nn.Module):
        def __init__(self, frozen=False):
            super().__init__()
            self.stem = nn.Linear(4, 8)
            self.blocks = nn.ModuleList([Inner(), Inner()])  # never called itself; its members run apart
            self.shared = nn.Linear(8, 8)
            self.rnn = nn.LSTM(8, 6, batch_first=True)
            self.head = nn.Sequential(nn.Linear(6, 3), nn.Dropout())
            self.unused = nn.Linear(100, 100)
            if frozen:
                self.stem.requires_grad_(False)
                self.blocks[0].scale.requires_grad_(False)

        def forward(self, x):
            x = self.blocks[0](self.stem(x))
            x = self.shared(self.blocks[1](torch.relu(x)))
            out, _ = self.rnn(self.shared(x))
            return self.head(out)
''')


@pytest.fixture(scope="module")
def vision_sh():
    """A daemon of this file's own: Vision imports torchvision into it, which the session's daemon must not
    have (test_model_open pins how `model open torchvision:NAME` refuses where torchvision does not load)."""
    with own_daemon() as shell:
        yield shell


def torchinfo_view(model, shape, depth=3):
    """What torchinfo's summary shows: rows, Param # cells, and its totals lines."""
    stats = torchinfo.summary(model, input_size=shape, depth=depth, verbose=0)
    shown = [layer for layer in stats.summary_list if layer.depth <= depth]
    rows = [(layer.class_name, layer.depth, layer.depth_index, layer.output_size) for layer in shown]
    cells = [layer.num_params_to_str(layer.depth == depth) for layer in shown]
    printed = str(stats)
    for unit in torchinfo.enums.Units:  # Python 3.11's format() of its str Enum prints "(Units.MEGABYTES)"
        printed = printed.replace("(%s)" % unit, "(%s)" % unit.value)
    totals = [line for line in printed.splitlines()
              if line.startswith(("Total params", "Trainable params", "Non-trainable params", "Total mult-adds"))]
    return rows, cells, totals, (stats.total_params, stats.trainable_params,
                                 stats.total_params - stats.trainable_params, stats.total_mult_adds)


def torchsh_view(sh, model, shape, depth=3):
    """The same from `torch nn summary`: rows from --json, Param # cells and totals lines from the text
    (whose cells must show the --json counts)."""
    flags = "--input_shape %s --depth %d" % (",".join(map(str, shape)), depth)
    data = json.loads(sh("torch nn summary %s %s --json" % (model, flags)))
    text = sh("torch nn summary %s %s" % (model, flags)).splitlines()
    rows = [(r["kind"], r["depth"], r["index"], r["output_shape"] or []) for r in data["layers"]]
    table, totals = text[1:len(rows) + 1], text[len(rows) + 1:]
    cells = [line.rsplit("  ", 1)[-1].strip() for line in table]
    for cell, r in zip(cells, data["layers"]):
        assert (cell == "--") == (r["parameters"] == 0)
        if cell not in ("--", "(recursive)"):
            assert int(cell.strip("()").replace(",", "")) == r["parameters"]
    return rows, cells, totals, (data["parameters"], data["trainable"], data["non_trainable"], data["mult_adds"])


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "vgg11", "squeezenet1_0", "efficientnet_b0"])
def test_rows_params_and_totals_are_torchinfos_on_torchvision_models(vision_sh, name):
    path = write_net(vision_sh.tmp("vision"), VISION, "visionnets.py")
    model = vision_sh("torch model open %s:Vision --args '{\"name\": \"%s\"}'" % (path, name))
    shape = (1, 3, 64, 64)
    assert torchsh_view(vision_sh, model, shape) == torchinfo_view(python_net(path, "Vision", name=name), shape)


@pytest.mark.parametrize("depth", [1, 3, 10])
def test_frozen_recursive_and_uncalled_rows_count_as_in_torchinfo(sh, depth):
    path = write_net(sh.tmp("odd"), ODD, "oddnet.py")
    model = sh("torch model open %s:Net --args '{\"frozen\": true}'" % path)
    got = torchsh_view(sh, model, (2, 5, 4), depth)
    assert got == torchinfo_view(python_net(path, frozen=True), (2, 5, 4), depth)
    assert got[3][:3] == (10809, 10761, 48)  # 40 stem + 8 scale frozen; the unused 100x100 layer counts
    assert "(recursive)" in got[1] and "(40)" in got[1]
