"""The optimizer steps of trials that train together (sweep/vectorized.py): PyTorch's single-tensor SGD and
Adam/AdamW (torch/optim/sgd.py `_single_tensor_sgd`, adam.py `_single_tensor_adam`: the CPU default,
foreach off) over stacked [T, …] tensors, one row a trial, each trial's hyperparameters a [T, 1, …] factor.

Every op is the one PyTorch's loop applies, in its order, the Python-float arithmetic on hyperparameters
done in Python as there, with a scalar argument turned into a factor where the CPU kernel rounds the same:
add(t, alpha=a) is addcmul(t, a), addcmul(t1, t2, value=v) is addcmul(v·t1, t2), addcdiv(t1, t2, value=v)
is addcdiv(v·t1, t2) (the kernels compute self + a·t, self + v·t1·t2 and self + v·t1/t2). So the step
itself is bit for bit the single run's; what differs is only the batched forward and backward.
"""
import torch

_STEP_DTYPE = {torch.float64: torch.float64}  # Adam's `step` is float32 unless the default dtype is float64


def reason(optimizers):
    """None when these optimizers (one a trial) have a vectorised step; else why not, in a few words."""
    kinds = {type(o) for o in optimizers}
    if len(kinds) > 1:
        return "the trials use different optimizers"
    kind = kinds.pop()
    if kind not in _STEPS:
        return "%s has no vectorised step (SGD, Adam and AdamW have)" % kind.__name__
    for o in optimizers:
        if len(o.param_groups) != 1:
            return "an optimizer has %d parameter groups; the vectorised step takes one" % len(o.param_groups)
        if o.state:
            return "an optimizer has state already (a resumed trial)"
        group = o.param_groups[0]
        fixed = [k for k, v in _STEPS[kind].fixed.items() if k in group and bool(group[k]) != v]
        if fixed:
            return "%s with %s=%s has no vectorised step" % (kind.__name__, fixed[0], group[fixed[0]])
        if isinstance(group["lr"], torch.Tensor):
            return "a tensor lr has no vectorised step"
    groups = [o.param_groups[0] for o in optimizers]
    differ = [k for k in _STEPS[kind].same if len({bool(g[k]) for g in groups}) > 1]
    return "the trials differ in %s, which the vectorised step shares" % differ[0] if differ else None


def stacked(optimizers):
    return _STEPS[type(optimizers[0])](optimizers)


class _Stacked:
    fixed = {"maximize": False, "differentiable": False, "fused": False, "foreach": False, "capturable": False}
    same = ()  # options every trial must share (as booleans)

    def __init__(self, optimizers):
        self.groups = [o.param_groups[0] for o in optimizers]  # one a stack row
        self.state = {}    # parameter name -> {state key: stacked tensor}
        self._factors = {}

    def factor(self, key, of_group, like):
        """A hyperparameter, of_group(param_group) for every trial, as a [T, 1, …] tensor that broadcasts against
        LIKE; kept under KEY (None: computed anew, for one that changes every step)."""
        cache_key = (key, like.dim())
        if key is None or cache_key not in self._factors:
            values = [of_group(g) for g in self.groups]
            f = torch.tensor(values, dtype=like.dtype, device=like.device).view(-1, *[1] * (like.dim() - 1))
            if key is None:
                return f
            self._factors[cache_key] = f
        return self._factors[cache_key]

    def keep_rows(self, rows):
        """Only these stack rows go on (the others' trials ended)."""
        index = torch.tensor(rows, dtype=torch.long)
        self.groups = [self.groups[r] for r in rows]
        self.state = {name: {k: v.index_select(0, index.to(v.device)) for k, v in s.items()}
                      for name, s in self.state.items()}
        self._factors = {}

    def write_state(self, row, optimizer, params):
        """Stack row ROW's state into OPTIMIZER as its own step would have left it (PARAMS: name -> parameter)."""
        optimizer.state.clear()
        for name, s in self.state.items():
            optimizer.state[params[name]] = self.trial_state(row, s)

    def trial_state(self, row, state):
        return {k: v[row].clone() for k, v in state.items()}


class StackedSGD(_Stacked):
    same = ("nesterov", "momentum")  # momentum: zero in every trial or in none (a buffer or not)

    def step(self, params, grads):
        momentum = self.groups[0]["momentum"] != 0
        for name, param in params.items():
            grad = grads.get(name)
            if grad is None:
                continue
            if any(g["weight_decay"] != 0 for g in self.groups):
                grad = torch.addcmul(grad, param, self.factor("wd", lambda g: g["weight_decay"], param))
            if momentum:
                grad = self._momentum(name, param, grad)
            param.addcmul_(grad, self.factor("-lr", lambda g: -g["lr"], param))

    def _momentum(self, name, param, grad):
        if name not in self.state:
            buf = grad.detach().clone()
            self.state[name] = {"momentum_buffer": buf}
        else:
            buf = self.state[name]["momentum_buffer"]
            buf.mul_(self.factor("m", lambda g: g["momentum"], param)).addcmul_(
                grad, self.factor("1-d", lambda g: 1 - g["dampening"], param))
        if self.groups[0]["nesterov"]:
            return torch.addcmul(grad, buf, self.factor("m", lambda g: g["momentum"], param))
        return buf


class StackedAdam(_Stacked):
    fixed = dict(_Stacked.fixed, amsgrad=False)
    same = ("decoupled_weight_decay",)

    def __init__(self, optimizers):
        super().__init__(optimizers)
        self.steps = 0  # every trial in the stack has taken the same number of steps

    def step(self, params, grads):
        self.steps += 1
        step = float(self.steps)
        decay = any(g["weight_decay"] != 0 for g in self.groups)
        for name, param in params.items():
            grad = grads.get(name)
            if grad is None:
                continue
            if name not in self.state:
                self.state[name] = {"exp_avg": torch.zeros_like(param), "exp_avg_sq": torch.zeros_like(param)}
            s = self.state[name]
            if decay and self.groups[0]["decoupled_weight_decay"]:
                param.mul_(self.factor("1-lr*wd", lambda g: 1 - g["lr"] * g["weight_decay"], param))
            elif decay:
                grad = torch.addcmul(grad, param, self.factor("wd", lambda g: g["weight_decay"], param))
            s["exp_avg"].lerp_(grad, self.factor("1-b1", lambda g: 1 - g["betas"][0], param))
            s["exp_avg_sq"].mul_(self.factor("b2", lambda g: g["betas"][1], param)).addcmul_(
                grad * self.factor("1-b2", lambda g: 1 - g["betas"][1], param), grad)
            bias_sqrt = self.factor(None, lambda g: (1 - g["betas"][1] ** step) ** 0.5, param)
            denom = (s["exp_avg_sq"].sqrt() / bias_sqrt).add_(self.factor("eps", lambda g: g["eps"], param))
            step_size = self.factor(None, lambda g: -(g["lr"] / (1 - g["betas"][0] ** step)), param)
            param.addcdiv_(s["exp_avg"] * step_size, denom)

    def trial_state(self, row, state):
        dtype = _STEP_DTYPE.get(torch.get_default_dtype(), torch.float32)
        return {"step": torch.tensor(float(self.steps), dtype=dtype), **super().trial_state(row, state)}


_STEPS = {torch.optim.SGD: StackedSGD, torch.optim.Adam: StackedAdam, torch.optim.AdamW: StackedAdam}
