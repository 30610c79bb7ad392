"""`torch nn summary` (its verb: verbs/nn_tools.py): one forward pass of zeros, every module call in order, the
way torchinfo's default `summary(model, input_size=…)` counts it.

torchinfo is the reference a PyTorch user already reads (tests/e2e/test_nn_summary.py holds this to it on
torchvision models), so its rules are kept, odd ones included:
- a row is a module CALL (a module called twice is two rows, the second marked recursive and counted once),
  with its depth in the module tree (a module registered twice takes its last place in that tree);
- a container never called itself (a ModuleList) still gets a row above its first called child;
- a row's count is the module's parameters, recursively, for a leaf or a row at the deepest shown depth,
  and for a shown container only what its children rows leave over (its own direct parameters);
- the totals add leaves and leftovers over ALL rows (hidden deeper ones too), and mult-adds are
  torchinfo's: a weight/bias count times the output's batch (and spatial size for Conv*) for each leaf.
"""
import math

import torch

from torchsh.errors import bad_argument
from torchsh.text.columns import print_table


class Node:
    """A module's place in the module tree: its dotted path, depth and parent node."""

    def __init__(self, module, path, depth, parent):
        self.module, self.path, self.depth, self.parent = module, path, depth, parent

    def ancestors(self):
        """{depth: node} of the containers above this one, the root (depth 0) left out."""
        found, node = {}, self.parent
        while node is not None and node.depth > 0:
            found[node.depth] = node
            node = node.parent
        return found


class Row:
    """One call of a module (or a container's place, for one never called): output and counts."""

    def __init__(self, node, recursive):
        self.node, self.recursive, self.output_shape = node, recursive, None
        self.leaf = next(node.module.children(), None) is None
        self.params = self.trainable = self.own = self.own_trainable = self.mult_adds = self.index = 0


def module_tree(model):
    """id(module) -> Node, depth first in registration order; a module met twice keeps its last place."""
    nodes, stack = {}, [(model, "", 0, None)]
    while stack:
        module, path, depth, parent = stack.pop()
        node = nodes[id(module)] = Node(module, path, depth, parent)
        stack += [(child, "%s.%s" % (path, name) if path else name, depth + 1, node)
                  for name, child in reversed(module._modules.items()) if child is not None]
    return nodes


def record_calls(model, x):
    """Run x through the model (eval, no grad, mode restored) and return a Row per module call, in order."""
    rows, seen, latest, hooks = [], set(), {}, []

    def before(module, inputs):
        row = latest[id(module)] = Row(nodes[id(module)], id(module) in seen)
        seen.add(id(module))
        rows.append(row)

    def after(module, inputs, output):
        latest[id(module)].output_shape = output_shape(output)

    nodes = module_tree(model)
    for node in nodes.values():
        hooks += [node.module.register_forward_pre_hook(before), node.module.register_forward_hook(after)]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            model(x)
    finally:
        model.train(was_training)
        for h in hooks:
            h.remove()
    return rows


def output_shape(output):
    """The shape torchinfo shows: a tensor's, else the first tensor of a tuple/list, the last of a dict."""
    if isinstance(output, torch.Tensor):
        return list(output.shape)
    if hasattr(output, "tensors"):
        return output_shape(output.tensors)
    if isinstance(output, dict) and output:
        return output_shape(list(output.values())[-1])
    if isinstance(output, (list, tuple)) and output:
        return output_shape(output[0])
    return None


def with_uncalled_containers(rows):
    """Insert a row for each container above a called module that has no row of its own there. A container
    placed twice (a ModuleList whose members run apart) is ONE row object, recursive at both places, as in
    torchinfo: so neither place subtracts its members twice from the rows above."""
    seen = {id(r.node.module) for r in rows}
    out, current, placed = [], {}, {}  # current: depth -> the module whose row is open at that depth
    for row in rows:
        above = row.node.ancestors()
        for depth in range(1, row.node.depth):
            module = above[depth].module
            if current.get(depth) is not module:
                if id(module) in placed:
                    placed[id(module)].recursive = True
                container = placed.setdefault(id(module), Row(above[depth], id(module) in seen))
                out.append(container)
                seen.add(id(module))
                current[depth] = module
        out.append(row)
        current = {d: m for d, m in current.items() if d < row.node.depth}
        current[row.node.depth] = row.node.module
    return out


def count_parameters(rows):
    """Each row's parameters (all, trainable) and what it adds itself (a leaf all, a container its leftover:
    all less what the rows below it add), right to left so the rows below are counted first."""
    for i in range(len(rows) - 1, -1, -1):
        row = rows[i]
        row.params, row.trainable = module_counts(row.node.module)
        if row.leaf:
            row.own, row.own_trainable = row.params, row.trainable
            row.mult_adds = mult_adds(row)
            continue
        below = []
        for other in rows[i + 1:]:
            if other.node.depth <= row.node.depth:
                break
            below.append(other)
        row.own = row.params - sum(o.own for o in below if not o.recursive)
        row.own_trainable = row.trainable - sum(o.own_trainable for o in below if not o.recursive)


def named_counts(module):
    """(name, count) per parameter; a pruned weight (NAME_orig beside a NAME_mask buffer) counts its kept
    entries, under NAME. Uninitialized lazy parameters count nothing."""
    for name, p in module.named_parameters():
        if torch.nn.parameter.is_lazy(p):
            continue
        if name.endswith("_orig"):
            mask = _attribute(module, name[:-5] + "_mask")
            if mask is not None:
                yield name[:-5], int(mask.sum()), p.requires_grad
                continue
        yield name, p.numel(), p.requires_grad


def _attribute(module, dotted):
    for part in dotted.split("."):
        module = getattr(module, part, None)
    return module if isinstance(module, torch.Tensor) else None


def module_counts(module):
    counts = list(named_counts(module))
    return sum(c for _, c, _ in counts), sum(c for _, c, grad in counts if grad)


def mult_adds(row):
    out, total = row.output_shape or [], 0
    if not out:
        return 0
    for name, count, _ in named_counts(row.node.module):
        if name in ("weight", "bias"):
            conv = "Conv" in type(row.node.module).__name__
            total += count * (math.prod(out[:1] + out[2:]) if conv else out[0])
        elif "weight" in name or "bias" in name:  # RNN weights: weight_ih_l0…
            total += count * math.prod(out[:2])
    return total


def summarize(model, input_shape, dtype=None, depth=3):
    """The Summary of MODEL for zeros of INPUT_SHAPE (an int or a list; DTYPE, else the model's), DEPTH levels deep."""
    if depth < 0:
        raise bad_argument("--depth is how many levels below the model to show: 0 or more, not %d" % depth)
    shape = [input_shape] if isinstance(input_shape, int) else list(input_shape)
    first = next(model.parameters(), None)
    dtype = dtype or (first.dtype if first is not None else torch.float32)
    x = torch.zeros(shape, dtype=dtype, device=first.device if first is not None else "cpu")
    rows = with_uncalled_containers(record_calls(model, x))
    count_parameters(rows)
    counted = [r for r in rows if not r.recursive]
    total = sum(r.own if r.leaf else max(r.own, 0) for r in counted)
    trainable = sum(r.own_trainable if r.leaf else max(r.own_trainable, 0) for r in counted)
    layers, cells = shown_rows(rows, depth)
    return Summary(cells, layers=layers, input_shape=shape, depth=depth, parameters=total, trainable=trainable,
                   non_trainable=total - trainable, mult_adds=sum(r.mult_adds for r in rows if r.leaf))


def shown_rows(rows, max_depth):
    """The rows down to max_depth as data, each numbered within its depth (torchinfo's depth-idx), and
    each one's Param # cell as torchinfo prints it."""
    shown, cells, numbered = [], [], {}
    for row in rows:  # a container placed twice keeps its last number, as in torchinfo
        numbered[row.node.depth] = row.index = numbered.get(row.node.depth, 0) + 1
    for row in rows:
        depth = row.node.depth
        if depth > max_depth:
            continue
        whole = row.recursive or row.leaf or depth == max_depth
        shown.append({"name": row.node.path, "kind": type(row.node.module).__name__, "depth": depth,
                      "index": row.index, "output_shape": row.output_shape,
                      "parameters": row.params if whole else max(row.own, 0),
                      "trainable": row.trainable if whole else max(row.own_trainable, 0),
                      "recursive": row.recursive})
        cells.append(param_cell(shown[-1], frozen=whole and not row.trainable))
    return shown, cells


class Summary(dict):
    """The --json data; the text table also shows each row's Param # cell as torchinfo prints it."""

    def __init__(self, cells, **data):
        super().__init__(**data)
        self.cells = cells

    def text(self):
        rows = [("  " * r["depth"] + r["kind"] + (": %d-%d" % (r["depth"], r["index"]) if r["depth"] else ""),
                 r["name"], r["output_shape"] or "--", cell) for r, cell in zip(self["layers"], self.cells)]
        table = print_table(rows, ("layer (type:depth-idx)", "name", "output shape", "param #"))
        return table + ("Total params: {:,}\nTrainable params: {:,}\nNon-trainable params: {:,}\n"
                        "Total mult-adds {}\n").format(self["parameters"], self["trainable"],
                                                       self["non_trainable"], _readable(self["mult_adds"]))


def param_cell(row, frozen):
    """torchinfo's Param #: "--" for none, "(recursive)" again, "(N)" a frozen leaf or deepest row."""
    if not row["parameters"]:
        return "--"
    if row["recursive"]:
        return "(recursive)"
    return ("({:,})" if frozen else "{:,}").format(row["parameters"])


def _readable(count):
    """torchinfo's way: (M) below 1e9, (G) below 1e12, else (T), two decimals unless whole."""
    unit, scale = next((u, s) for u, s in (("T", 1e12), ("G", 1e9), ("M", 1e6)) if count >= s or u == "M")
    value = count / scale
    return "(%s): %s" % (unit, "{:,d}".format(int(value)) if value.is_integer() else "{:,.2f}".format(value))
