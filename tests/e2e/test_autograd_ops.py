"""Gradients of many ops through the shell, bit for bit equal to the same computation in-process.

Each case: inputs sent with sh.put and `torch requires_grad H true`, then `CMD | torch sum | torch
backward` in bash, then each input's `torch grad` fetched and compared with torch.equal against
op -> sum -> backward in this process.
"""
import pytest
import torch
import torch.nn.functional as F

g = torch.Generator().manual_seed(4)
X = torch.randn(4, 3, generator=g)                # any sign
P = torch.rand(4, 3, generator=g) + 0.5           # positive
U = torch.rand(4, 3, generator=g) * 1.6 - 0.8     # inside (-1, 1)
Y = torch.randn(4, 3, generator=g)
C = torch.randn(4, 3, generator=g)                # a constant weight, so sums of softmax & co. are not flat
M = torch.randn(3, 2, generator=g)
S = torch.randn(3, 3, generator=g)
V = torch.randn(5, generator=g)
W = torch.randn(5, generator=g)
D = torch.randn(4, 3, generator=g, dtype=torch.float64)
T = torch.tensor([2, 0, 1, 2])
COND = X > 0

# name -> (bash command with {x}-style holes, {hole: tensor}, holes that require grad, in-process function)
CASES = {
    "sin": ("torch sin {x}", {"x": X}, "x", lambda t: torch.sin(t["x"])),
    "cos": ("torch cos {x}", {"x": X}, "x", lambda t: torch.cos(t["x"])),
    "tan": ("torch tan {u}", {"u": U}, "u", lambda t: torch.tan(t["u"])),
    "exp": ("torch exp {x}", {"x": X}, "x", lambda t: torch.exp(t["x"])),
    "log": ("torch log {p}", {"p": P}, "p", lambda t: torch.log(t["p"])),
    "sqrt": ("torch sqrt {p}", {"p": P}, "p", lambda t: torch.sqrt(t["p"])),
    "rsqrt": ("torch rsqrt {p}", {"p": P}, "p", lambda t: torch.rsqrt(t["p"])),
    "reciprocal": ("torch reciprocal {p}", {"p": P}, "p", lambda t: torch.reciprocal(t["p"])),
    "tanh": ("torch tanh {x}", {"x": X}, "x", lambda t: torch.tanh(t["x"])),
    "sigmoid": ("torch sigmoid {x}", {"x": X}, "x", lambda t: torch.sigmoid(t["x"])),
    "relu": ("torch relu {x}", {"x": X}, "x", lambda t: torch.relu(t["x"])),
    "abs": ("torch abs {x}", {"x": X}, "x", lambda t: torch.abs(t["x"])),
    "neg": ("torch neg {x}", {"x": X}, "x", lambda t: torch.neg(t["x"])),
    "atan": ("torch atan {x}", {"x": X}, "x", lambda t: torch.atan(t["x"])),
    "asin": ("torch asin {u}", {"u": U}, "u", lambda t: torch.asin(t["u"])),
    "sinh": ("torch sinh {x}", {"x": X}, "x", lambda t: torch.sinh(t["x"])),
    "cosh": ("torch cosh {x}", {"x": X}, "x", lambda t: torch.cosh(t["x"])),
    "erf": ("torch erf {x}", {"x": X}, "x", lambda t: torch.erf(t["x"])),
    "expm1": ("torch expm1 {x}", {"x": X}, "x", lambda t: torch.expm1(t["x"])),
    "log1p": ("torch log1p {p}", {"p": P}, "p", lambda t: torch.log1p(t["p"])),
    "pow_scalar": ("torch pow {x} 3", {"x": X}, "x", lambda t: torch.pow(t["x"], 3)),
    "pow_tensor": ("torch pow {p} {y}", {"p": P, "y": Y}, "py", lambda t: torch.pow(t["p"], t["y"])),
    "mul": ("torch mul {x} {y}", {"x": X, "y": Y}, "xy", lambda t: torch.mul(t["x"], t["y"])),
    "add_alpha": ("torch add {x} {y} --alpha 2", {"x": X, "y": Y}, "xy", lambda t: torch.add(t["x"], t["y"], alpha=2)),
    "sub": ("torch sub {x} {y}", {"x": X, "y": Y}, "xy", lambda t: torch.sub(t["x"], t["y"])),
    "div": ("torch div {x} {p}", {"x": X, "p": P}, "xp", lambda t: torch.div(t["x"], t["p"])),
    "maximum": ("torch maximum {x} {y}", {"x": X, "y": Y}, "xy", lambda t: torch.maximum(t["x"], t["y"])),
    "where": ("torch where {c} {x} {y}", {"c": COND, "x": X, "y": Y}, "xy",
              lambda t: torch.where(t["c"], t["x"], t["y"])),
    "clamp": ("torch clamp {x} --min -0.5 --max 0.5", {"x": X}, "x", lambda t: torch.clamp(t["x"], -0.5, 0.5)),
    "matmul": ("torch matmul {x} {m}", {"x": X, "m": M}, "xm", lambda t: torch.matmul(t["x"], t["m"])),
    "mm": ("torch mm {x} {m}", {"x": X, "m": M}, "xm", lambda t: torch.mm(t["x"], t["m"])),
    "dot": ("torch dot {v} {w}", {"v": V, "w": W}, "vw", lambda t: torch.dot(t["v"], t["w"])),
    "outer": ("torch outer {v} {w}", {"v": V, "w": W}, "vw", lambda t: torch.outer(t["v"], t["w"])),
    "trace": ("torch trace {s}", {"s": S}, "s", lambda t: torch.trace(t["s"])),
    "tril": ("torch tril {s} | torch mul {s}", {"s": S}, "s", lambda t: torch.tril(t["s"]) * t["s"]),
    "sum_dim": ("torch sum {x} --dim 1 | torch pow 2", {"x": X}, "x", lambda t: torch.sum(t["x"], dim=1).pow(2)),
    "mean_dim": ("torch mean {x} --dim 0 | torch exp", {"x": X}, "x", lambda t: torch.mean(t["x"], dim=0).exp()),
    "prod_dim": ("torch prod {x} --dim 1", {"x": X}, "x", lambda t: torch.prod(t["x"], dim=1)),
    "amax": ("torch amax {x} --dim 1", {"x": X}, "x", lambda t: torch.amax(t["x"], dim=1)),
    "var": ("torch var {x} --dim 1", {"x": X}, "x", lambda t: torch.var(t["x"], dim=1)),
    "std": ("torch std {x}", {"x": X}, "x", lambda t: torch.std(t["x"])),
    "norm": ("torch norm {x}", {"x": X}, "x", lambda t: torch.norm(t["x"])),
    "logsumexp": ("torch logsumexp {x} --dim 1", {"x": X}, "x", lambda t: torch.logsumexp(t["x"], dim=1)),
    "cumsum": ("torch cumsum {x} --dim 1 | torch mul {c}", {"x": X, "c": C}, "x",
               lambda t: torch.cumsum(t["x"], dim=1) * t["c"]),
    "softmax": ("torch softmax {x} --dim 1 | torch mul {c}", {"x": X, "c": C}, "x",
                lambda t: torch.softmax(t["x"], dim=1) * t["c"]),
    "log_softmax": ("torch special log_softmax {x} --dim 1 | torch mul {c}", {"x": X, "c": C}, "x",
                    lambda t: torch.special.log_softmax(t["x"], dim=1) * t["c"]),
    "transpose": ("torch transpose {x} 0 1 | torch matmul {m}", {"x": X, "m": torch.randn(4, 2, generator=g)}, "x",
                  lambda t: torch.transpose(t["x"], 0, 1) @ t["m"]),
    "reshape": ("torch reshape {x} '[3,4]' | torch mul {c}", {"x": X, "c": C.reshape(3, 4)}, "x",
                lambda t: torch.reshape(t["x"], [3, 4]) * t["c"]),
    "cat": ("torch cat {x} {y} | torch pow 2", {"x": X, "y": Y}, "xy", lambda t: torch.cat([t["x"], t["y"]]).pow(2)),
    "stack": ("torch stack {x} {y} --dim 1 | torch sin", {"x": X, "y": Y}, "xy",
              lambda t: torch.stack([t["x"], t["y"]], dim=1).sin()),
    "gelu": ("torch gelu {x}", {"x": X}, "x", lambda t: F.gelu(t["x"])),
    "silu": ("torch silu {x}", {"x": X}, "x", lambda t: F.silu(t["x"])),
    "softplus": ("torch softplus {x}", {"x": X}, "x", lambda t: F.softplus(t["x"])),
    "elu": ("torch elu {x}", {"x": X}, "x", lambda t: F.elu(t["x"])),
    "leaky_relu": ("torch leaky_relu {x} 0.2", {"x": X}, "x", lambda t: F.leaky_relu(t["x"], 0.2)),
    "mse_loss": ("torch mse_loss {x} {y}", {"x": X, "y": Y}, "xy", lambda t: F.mse_loss(t["x"], t["y"])),
    "cross_entropy": ("torch cross_entropy {x} {t}", {"x": X, "t": T}, "x", lambda t: F.cross_entropy(t["x"], t["t"])),
    "float64_exp_mul": ("torch exp {d} | torch mul {d}", {"d": D}, "d", lambda t: torch.exp(t["d"]) * t["d"]),
}


def _shell_grads(sh, command, tensors, grad_holes):
    handles = {k: sh.put(v, requires_grad=(k in grad_holes)) for k, v in tensors.items()}
    sh("%s | torch sum | torch backward" % command.format(**handles))
    return {k: sh.fetch(sh("torch grad %s" % handles[k])) for k in grad_holes}


def _local_grads(fn, tensors, grad_holes):
    leaves = {k: v.clone().requires_grad_(k in grad_holes) for k, v in tensors.items()}
    fn(leaves).sum().backward()
    return {k: leaves[k].grad for k in grad_holes}


def test_at_least_thirty_distinct_ops_are_checked():
    ops = {c[0].split(" {")[0] for c in CASES.values()}
    assert len(ops) >= 30, sorted(ops)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_equals_in_process_bit_for_bit(sh, name):
    command, tensors, grad_holes, fn = CASES[name]
    got = _shell_grads(sh, command, tensors, grad_holes)
    want = _local_grads(fn, tensors, grad_holes)
    for k in grad_holes:
        assert got[k].dtype == want[k].dtype and got[k].shape == want[k].shape
        assert torch.equal(got[k], want[k]), "%s: d/d%s differs\nshell %s\nlocal %s" % (name, k, got[k], want[k])
