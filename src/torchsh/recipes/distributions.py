"""A distribution's persistence: its class and the parameters it was given (tensors written inline, or as
references to held ones). It has no state: its parameters are its recipe."""
import torch.distributions

from torchsh.recipes.base import Persistence, class_named


def capture(d, walk):
    """The constructor arguments: the parameters as given. probs and logits are both cached once used; the one
    given is the one `_param` is (Categorical, Bernoulli, …)."""
    given = {k: v for k, v in vars(d).items() if k in d.arg_constraints}
    if "probs" in given and "logits" in given and hasattr(d, "_param"):
        given = {k: v for k, v in given.items() if k not in ("probs", "logits") or v is d._param}
    return {"kind": "dist", "class": type(d).__name__, "params": {k: walk.value(v) for k, v in given.items()}}


def build(rec, walk):
    cls = class_named(torch.distributions, rec["class"], torch.distributions.Distribution)
    return cls(**{k: walk.value(v) for k, v in rec["params"].items()})


DISTRIBUTION = Persistence(capture, build)
