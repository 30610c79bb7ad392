"""What building a module, and an optimizer's state, will allocate: found without allocating it, and admitted
through the budget (Budget.admit_bytes) before it happens, so a size typed in words is refused with
out_of_memory instead of getting the daemon OOM-killed with every object it holds.

- A module: built once on the meta device (module_bytes), its parameters and buffers summed. Every face that
  builds modules from words calls admit_module: a layer (`torch nn linear 4 1000000000`, a layer of `nn
  sequential`'s words, a sweep's --model template: all through verbs/nn.construct) and `torch model open`.
- An optimizer: the state its first step makes, found by stepping a twin whose parameters and gradients are
  meta tensors (optimizer_state_bytes; the rule is its docstring). It is admitted when the optimizer is
  created (admit_optimizer) and again, with the gradients a backward will add, at its first step
  (admit_first_step): memory taken meanwhile counts.
Imports no torch at module level, as the rest of the budget.
"""
import contextlib
import weakref

from torchsh.memory.sizes import warnings_off

_STEPPED = weakref.WeakSet()  # optimizers whose first step was admitted: later steps are not checked again


def module_bytes(build):
    """The bytes of the parameters and buffers of the module build() makes, found by building it on the meta
    device: nothing is allocated and no random number drawn (the CPU generator's state is put back all the
    same, for a constructor that draws on a device of its own), so the real build after it makes the weights
    it would have made without it. Tensors the build did not make (a module handle put in a container, a
    tensor argument) count as nothing: they are held already; lazy parameters hold nothing yet.
    A build that fails on meta (an int64 overflow in its last tensor, a user's class raising after its
    layers) counts the meta tensors its torch calls made before it failed: at least what the real build
    allocates before it fails the same way. None when that is nothing (the real build reports why)."""
    import torch
    try:
        module = _on_meta(build)
    except (Exception, SystemExit):  # a user's class may raise anything, even SystemExit: the real build says it
        return _made_before_failing(build)
    if not isinstance(module, torch.nn.Module):
        return None
    return _new_bytes(list(module.parameters()) + list(module.buffers()), meta_only=True)


def _on_meta(build, counting=None):
    """build() with factories on the meta device, the CPU generator's state put back and warnings silenced."""
    import torch
    with torch.random.fork_rng(devices=[]), torch.device("meta"), counting or contextlib.nullcontext(), \
            warnings_off():
        return build()


def _made_before_failing(build):
    """The bytes of the meta tensors a failing build made before it failed, or None: built again, counted
    as it goes (a second build, only on this path: counting every torch call doubles a build's time)."""
    made = _meta_made()
    try:
        _on_meta(build, counting=made)
    except (Exception, SystemExit):
        pass
    return made.bytes or None


def _meta_made():
    """A TorchFunctionMode that counts the bytes of the meta tensors the torch calls under it return, each
    storage once (kept alive meanwhile, so no address is reused)."""
    global _MetaMade
    if _MetaMade is None:
        import torch
        from torch.overrides import TorchFunctionMode

        class _MetaMade(TorchFunctionMode):
            def __init__(self):
                super().__init__()
                self.bytes, self.seen = 0, {}

            def __torch_function__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                for t in _tensors_in(out):
                    if t.is_meta and not torch.nn.parameter.is_lazy(t):
                        key = t.untyped_storage()._cdata
                        if key not in self.seen:
                            self.seen[key] = t
                            self.bytes += t.untyped_storage().nbytes()
                return out
    return _MetaMade()


_MetaMade = None


def admit_module(ctx, build, name, device=None):
    """Refuse (out_of_memory) the module build() makes when its parameters and buffers would not fit the
    budget; name says whose ("Linear"). build must make it where the meta device context puts it: a module
    for another device (device: CUDA) is not estimated (a CUDA out-of-memory error is caught)."""
    budget = _budget(ctx)
    if budget is None or (device is not None and str(device).split(":")[0] not in ("cpu", "meta")):
        return
    size = module_bytes(build)
    if size:
        budget.admit_bytes(size, "%s's parameters and buffers" % name)


def optimizer_state_bytes(cls, groups, options, stepped):
    """The bytes of the state an optimizer of class cls over these param groups keeps, or None when it
    cannot be told. The rule: a twin of it, cls(groups, **options) over meta copies of the parameters (one
    per distinct shape, dtype and gradient in a group, with a meta gradient where stepped(param) says the
    step will see one), takes one step with a closure that returns a meta loss; the state it holds then,
    counted for each parameter a twin stands for, is the real one's tensor for tensor (Adam and AdamW:
    exp_avg and exp_avg_sq, 2x the parameters; SGD with momentum 1x; Adagrad's sum, made at construction).
    A step that reads a value (ASGD's, Adafactor's .item()) fails on meta after making its state, which
    counts; where dense gradients are refused before any state is made (SparseAdam), the twin steps again
    with sparse ones. An optimizer with a history (LBFGS's history_size) keeps that many directions and
    steps, each a flat copy of the parameters, and three more (the direction, the last gradient, this
    step's): its state grows over steps to (2 * history_size + 3) x the parameters' bytes, which counts.
    Only parameters in host memory are estimated (None otherwise)."""
    import torch
    for sparse in (False, True):
        try:
            with torch.random.fork_rng(devices=[]), warnings_off():
                twin_groups, counts = _twin_groups(groups, stepped, sparse)
                twin = cls(twin_groups, **options)
        except Exception:  # a parameter outside host memory, or options the real constructor refuses (it says so)
            return None
        failed = _step(twin)
        size = sum(counts.get(id(p), 1) * _new_bytes(_tensors_in(state)) for p, state in twin.state.items())
        if size or not failed:
            break
    return size + sum(_history_bytes(twin_group, group) for twin_group, group in zip(twin.param_groups, groups))


def admit_optimizer(ctx, cls, groups, options):
    """Refuse (out_of_memory) an optimizer whose state would not fit the budget, before it is built."""
    budget = _budget(ctx)
    if budget is None:
        return
    size = optimizer_state_bytes(cls, groups, options, _will_have_grad)
    if size:
        budget.admit_bytes(size, "%s's state" % cls.__name__)


def admit_first_step(ctx, optimizer, backward):
    """Before an optimizer's first step in this daemon: refuse (out_of_memory) its state, when it has none
    yet, plus the gradients the step's backward will make (backward: train_step and fit run one first; a
    plain `step` uses the gradients already there) when they would not fit. Once admitted, never again."""
    budget = _budget(ctx)
    if budget is None or optimizer in _STEPPED:
        return
    from torch.nn.parameter import is_lazy
    params = [p for g in optimizer.param_groups for p in g["params"]]
    if any(is_lazy(p) for p in params):
        return  # a lazy layer's size comes with its first forward: admitted at the step after it
    stepped = _will_have_grad if backward else _has_grad
    state = 0 if optimizer.state else optimizer_state_bytes(type(optimizer), optimizer.param_groups, {}, stepped)
    grads = _param_bytes(p for p in params if p.requires_grad and p.grad is None and p.device.type == "cpu") \
        if backward else 0  # the budget is the host's
    size = (state or 0) + grads
    if size:
        budget.admit_bytes(size, "%s's first step (its state and the gradients)" % type(optimizer).__name__)
    _STEPPED.add(optimizer)


def _will_have_grad(p):
    return p.requires_grad


def _has_grad(p):
    return p.grad is not None


def _twin_groups(groups, stepped, sparse):
    """(the param groups with meta tensors for parameters, {id(twin): how many parameters it stands for}): one
    twin per distinct shape, dtype and gradient in a group. A per-parameter optimizer's state for a parameter
    depends on it and its group's options alone, so a hundred 64x64 layers step a twin of two tensors (a
    step of one twin for each parameter took ~1 ms a tensor)."""
    import torch
    out, counts = [], {}
    for group in groups:
        params = _params_of(group)
        twins = {}
        for p in params:
            if not isinstance(p, torch.Tensor) or p.device.type != "cpu":
                raise ValueError("not in host memory")  # the budget is about the host's
            key = (tuple(p.shape), p.dtype, p.requires_grad, stepped(p))
            if key not in twins:
                twins[key] = _twin(p, key[3], sparse)
            counts[id(twins[key])] = counts.get(id(twins[key]), 0) + 1
        out.append(dict(group, params=list(twins.values())))
    return out, counts


def _params_of(group):
    import torch
    params = group["params"]
    return [params] if isinstance(params, torch.Tensor) else list(params)


def _twin(p, with_grad, sparse):
    """A meta tensor of p's shape and dtype, with a meta gradient (sparse: SparseAdam's kind) if with_grad."""
    import torch
    twin = torch.empty_like(p, device="meta").requires_grad_(p.requires_grad)
    if with_grad:
        twin.grad = torch.empty_like(twin) if not sparse else torch.sparse_coo_tensor(
            torch.empty((p.dim(), 0), dtype=torch.long, device="meta"),
            torch.empty((0,), dtype=p.dtype, device="meta"), p.shape)
    return twin


def _step(twin):
    """One step of the twin; True when it failed partway (its state so far still counts)."""
    import torch
    try:
        with torch.random.fork_rng(devices=[]), warnings_off():
            twin.step(lambda: torch.zeros((), device="meta"))  # LBFGS needs a closure; the others call it, go on
    except Exception:
        return True
    return False


def _history_bytes(twin_group, group):
    """LBFGS's history at its longest (optimizer_state_bytes) over the group's parameters; 0 for an optimizer
    with none."""
    history = twin_group.get("history_size")
    if not isinstance(history, int) or isinstance(history, bool) or history < 0:
        return 0
    return (2 * history + 3) * _param_bytes(_params_of(group))


def _tensors_in(value):
    import torch
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors_in(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors_in(v)


def _new_bytes(tensors, meta_only=False):
    """The bytes of these tensors' storages, each storage once (tied weights, views); meta_only: only those
    on the meta device (what a meta build made, not what it was given)."""
    import torch
    seen, total = set(), 0
    for t in tensors:
        if (meta_only and not t.is_meta) or torch.nn.parameter.is_lazy(t):
            continue
        if t.is_sparse:  # a sparse gradient's twin: its indices and values
            total += _new_bytes([t._indices(), t._values()])
            continue
        key = t.untyped_storage()._cdata
        if key not in seen:
            seen.add(key)
            total += t.untyped_storage().nbytes()
    return total


def _param_bytes(params):
    """The bytes of these parameters (or of a gradient for each), each parameter once."""
    seen = {}
    for p in params:
        seen[id(p)] = p.numel() * p.element_size()
    return sum(seen.values())


def _budget(ctx):
    """The daemon's budget, when it has a limit (None: no admission)."""
    budget = getattr(getattr(ctx, "app", None), "memory", None)
    return budget if budget is not None and budget.limit is not None else None
