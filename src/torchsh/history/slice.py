"""`--for HANDLE`: the entries that produced one object, a backward slice over the def-use graph of handles.

An entry reads the handles among its arguments, defines its outputs, and writes its in-place targets
(Entry.writes): what its verb's row says it writes (step its optimizer, zero_grad its handles, train_step its
model and optimizer), backward every object its loss was computed from (their .grad), and a forward through
a module with buffers in training mode the module. Objects that share data are one object here (an optimizer
and the modules it was built from, a sequential and its children, a parameter handle and its module): a
write to one is a write to all.
"""
from torchsh.history.values import handles_in


class _Groups:
    """Union-find over handles: the objects that share data."""

    def __init__(self):
        self.parent = {}

    def find(self, h):
        root = h
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        while h != root:
            self.parent[h], h = root, self.parent.get(h, h)
        return root

    def join(self, handles):
        roots = [self.find(h) for h in handles]
        for r in roots[1:]:
            self.parent[r] = roots[0]


def reads(e):
    return handles_in(e.args)


def _links(e):
    """The handles entry e makes one object of."""
    if e.made.get("linked") or e.op.startswith(("optim.", "sched.")):
        return reads(e) + list(e.outputs)
    return []


def writes(e, ancestors, gets_grads=lambda h: True):
    """The handles entry e changes in place (its outputs aside); backward: the objects its loss was computed
    from that keep a .grad (gets_grads)."""
    out = handles_in(list(e.writes))
    if e.op == "backward":
        out += [h for h in ancestors(handles_in(e.args.get("loss"))) if gets_grads(h)]
    return out


def _groups(entries):
    groups = _Groups()
    for e in entries:
        links = _links(e)
        if links:
            groups.join(links)
    return groups


def _grad_test(entries, maker):
    """handle -> may it hold a .grad: a module's, a leaf made with requires_grad, a tensor `requires_grad`
    turned on, or one the log did not make."""
    turned = {h for e in entries if e.op in ("requires_grad", "retain_grad") for h in reads(e)}
    return lambda h: h not in maker or maker[h].made.get("grads") or h in turned


def _ancestors(handles, maker):
    """The handles these were computed from, themselves included (maker: handle -> the entry that made it)."""
    seen, todo = set(), list(handles)
    while todo:
        h = todo.pop()
        if h not in seen:
            seen.add(h)
            if h in maker:
                todo += reads(maker[h])
    return list(seen)


def backward_slice(entries, target):
    """The entries (in order) that the object `target` depends on."""
    groups, maker = _groups(entries), {h: e for e in entries for h in e.outputs}
    grads = _grad_test(entries, maker)
    wanted, kept = {groups.find(target)}, []
    for e in reversed(entries):
        touched = {groups.find(h) for h in list(e.outputs) + writes(e, lambda hs: _ancestors(hs, maker), grads)}
        if touched & wanted:
            kept.append(e)
            wanted |= {groups.find(h) for h in reads(e)} | touched
    return kept[::-1]


def fully_kept(entries, kept):
    """The handles defined in `kept` whose every write is kept too: their values at the end are the script's."""
    kept_ids = {id(e) for e in kept}
    groups, maker = _groups(entries), {h: e for e in entries for h in e.outputs}
    grads, spoiled = _grad_test(entries, maker), set()
    for e in entries:
        if id(e) not in kept_ids:
            spoiled |= {groups.find(h) for h in writes(e, lambda hs: _ancestors(hs, maker), grads)}
    return sorted({h for e in kept for h in e.outputs if groups.find(h) not in spoiled})
