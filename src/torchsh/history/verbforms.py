"""The forms of the hand-written verbs' rows: each writes one logged request as the PyTorch it ran, and
verbs/ hands it to the verb's @verb (form=), so a verb's form is on its row (forms.py writes the rest).

A form takes the entry and the writer (python.Writer: r.v(handle), r.lit(value), r.outs(e)) and gives the
script's lines; one that cannot write a run refuses it naming why (forms.refuse).
"""
from torchsh.history.forms import refuse


def tensor(e, r):
    t = e.made.get("data")
    if t is None:
        raise refuse("tensor", "its values were not kept")
    return ["%s = %s" % (r.outs(e), r.tensor_literal(t, bool(e.args.get("requires_grad"))))]


def _kwargs_text(e, r, names, defaults):
    """`, name=value` for each argument given that differs from the verb's default."""
    return "".join(", %s=%s" % (n, r.lit(e.args[n])) for n in names
                   if n in e.args and e.args[n] != defaults.get(n))


def backward(e, r):
    rest = _kwargs_text(e, r, ("gradient", "retain_graph", "create_graph"),
                        {"gradient": None, "retain_graph": None, "create_graph": False})
    return ["%s.backward(%s)" % (r.lit(e.args["loss"]), rest.lstrip(", "))]


def zero_grad(e, r):
    out, none = [], e.args.get("set_to_none")
    for h in e.args["handles"]:
        name = r.lit(h)
        if h[1].startswith("tensor://"):
            if none:
                out.append("%s.grad = None" % name)
            else:
                out.append("if %s.grad is not None: %s.grad.requires_grad_(False); %s.grad.zero_()" % (name, name, name))
        else:
            out.append("%s.zero_grad(set_to_none=%s)" % (name, r.lit(True if none is None else none)))
    return out


def train_step(e, r):
    a = e.args
    if a.get("autocast") is not None or a.get("compile"):
        raise refuse("train_step", "--%s is not written yet" % ("compile" if a.get("compile") else "autocast"))
    m, o = r.lit(a["model"]), r.lit(a["optimizer"])
    given = e.made.get("loss_args", a.get("loss_args"))  # as it ran: weight, pos_weight tensors (train/loss/functions.py)
    options = "".join(", %s=%s" % (r.name(k), r.lit(v)) for k, v in (given or {}).items()) \
        if isinstance(given, dict) else ""
    if isinstance(a.get("loss_args"), str):
        raise refuse("train_step", "--loss_args as text is not written yet")
    body = ["%s.zero_grad()" % o,
            "_loss = torch.nn.functional.%s(%s(%s), %s%s)" % (r.name(a.get("loss", "mse_loss")), m, r.lit(a["input"]),
                                                              r.lit(a["target"]), options),
            "_loss.backward()"]
    if a.get("clip") is not None:
        body.append("torch.nn.utils.clip_grad_norm_([p for g in %s.param_groups for p in g['params']], %s)"
                    % (o, r.lit(a["clip"])))
    body.append("%s.step()" % o)
    if a.get("sched") is not None:
        body.append("%s.step(%s)" % (r.lit(a["sched"]), "_loss.item()" if e.made.get("plateau") else ""))
    return body


def forward(e, r):
    inputs = ", ".join(r.lit(x) for x in e.args["inputs"])
    call = "%s(%s)" % (r.lit(e.args["model"]), inputs)
    return ["%s = %s" % (r.outs(e), call if len(e.outputs) == 1 else "_flat(%s)" % call)]


def predict(e, r):
    if "inputs" not in e.args:
        raise refuse("predict", "predictions over a dataset are not written yet")
    m = r.lit(e.args["model"])
    return ["_was = %s.training; %s.eval()" % (m, m), "with torch.no_grad():"] + \
        ["    " + line for line in forward(e, r)] + ["%s.train(_was)" % m]


def method(call, *names):
    """A verb that is one method call on its first argument: `x.call(second, …)`."""
    def form(e, r):
        target = r.lit(e.args[names[0]])
        rest = ", ".join(r.lit(e.args[n]) for n in names[1:] if n in e.args)
        text = "%s.%s(%s)" % (target, call, rest)
        return ["%s = %s" % (r.outs(e), text) if e.outputs else text]
    return form


def requires_grad(e, r):
    value = e.args.get("value")
    return [] if value is None else ["%s.requires_grad_(%s)" % (r.lit(e.args["target"]), r.lit(value))]


def clip(fn, option_names):
    def form(e, r):
        options = "".join(", %s=%s" % (n, r.lit(e.args[n])) for n in option_names if n in e.args)
        return ["torch.nn.utils.%s(%s%s)" % (fn, r.params(e.args["targets"]), options)]
    return form


def to(e, r):
    options = ", ".join("%s=%s" % (k, r.lit(e.args[k])) for k in ("dtype", "device", "copy")
                        if e.args.get(k) not in (None, False))
    return ["%s = %s.to(%s)" % (r.outs(e), r.lit(e.args["input"]), options)]


def sched_step(e, r):
    metric = e.args.get("metric")
    return ["%s.step(%s)" % (r.lit(e.args["scheduler"]), r.lit(metric) if metric is not None else "")]


def grad(e, r):
    return ["%s = %s.grad.clone()" % (r.outs(e), r.lit(e.args["input"]))]


def parameters(e, r):
    return ["%s = list(%s.parameters())" % (r.outs(e) + ("," if len(e.outputs) == 1 else ""), r.lit(e.args["model"]))]


def manual_seed(e, r):
    return ["torch.manual_seed(%d)" % e.args["seed"]]
