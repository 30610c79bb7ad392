"""`torch sweep --space`: the search space as text, read into Optuna's own distributions, and the
`{name}` placeholders of --model and --opt filled with one trial's values.

    width: [64, 128, 256]; lr: loguniform(1e-4, 1e-1); layers: int(1, 3); act: [relu, gelu]

Each entry is NAME: SPEC, separated by `;` or newlines. SPEC is one of
- `[a, b, …]`: a choice (CategoricalDistribution): numbers, true/false, or words;
- `uniform(lo, hi)`, `loguniform(lo, hi)`, `quniform(lo, hi, q)`: a float (FloatDistribution: log=True, step=q);
- `int(lo, hi)`, `int(lo, hi, step)`, `logint(lo, hi)`: an integer, both ends included (IntDistribution).
These are the names of `trial.suggest_float(…, log=True)` and friends in an Optuna script, and the
distributions are Optuna's, so a study made here reads the same from Python.

Nothing here imports optuna at module level: `torch sweep --help` and the op table stay cheap.
"""
import math
import re

from torchsh.errors import TorchshError, bad_argument

_NAME = re.compile(r"[A-Za-z_]\w*\Z")
_CALL = re.compile(r"(\w+)\s*\((.*)\)\Z", re.S)
PLACEHOLDER = re.compile(r"\{([A-Za-z_]\w*)\}")
_FLOATS = {"uniform": 2, "loguniform": 2, "quniform": 3}
_INTS = {"int": (2, 3), "logint": (2, 2)}
_HINT = "e.g. --space 'width: [64,128]; lr: loguniform(1e-4,1e-1); depth: int(1,3)'"
_INT_MAX = 2 ** 63 - 1  # what a trial's integer may be: a flag's int64


def parse(text):
    """--space TEXT -> {name: an Optuna distribution}, in the order written."""
    import optuna.distributions as dist
    space = {}
    for entry in (e.strip() for e in re.split(r"[;\n]", text)):
        if not entry:
            continue
        name, colon, spec = (part.strip() for part in entry.partition(":"))
        if not colon or not _NAME.match(name):
            raise bad_argument("--space: cannot read %r as NAME: SPEC" % entry, _HINT)
        if name in space:
            raise bad_argument("--space names %s twice" % name)
        space[name] = _distribution(dist, name, spec)
    if not space:
        raise bad_argument("--space is empty", _HINT)
    return space


def _distribution(dist, name, spec):
    if spec.startswith("[") and spec.endswith("]"):
        choices = tuple(_word(w.strip()) for w in spec[1:-1].split(",") if w.strip())
        if any(isinstance(c, float) and math.isnan(c) for c in choices):  # nan equals nothing: never found again
            raise bad_argument("--space %s: nan cannot be a choice: %s" % (name, spec), _HINT)
        if not choices or len(set(choices)) < len(choices):
            raise bad_argument("--space %s: a choice needs distinct values: %s" % (name, spec))
        return dist.CategoricalDistribution(choices)
    call = _CALL.match(spec)
    if call is None or call.group(1) not in _FLOATS and call.group(1) not in _INTS:
        raise bad_argument("--space %s: cannot read %r" % (name, spec),
                           "a choice [a,b], uniform(lo,hi), loguniform(lo,hi), quniform(lo,hi,q), int(lo,hi), "
                           "int(lo,hi,step) or logint(lo,hi)")
    kind, numbers = call.group(1), [_number(name, w.strip()) for w in call.group(2).split(",")]
    _check_range(name, kind, numbers)
    try:
        if kind in _FLOATS:
            if len(numbers) != _FLOATS[kind]:
                raise ValueError("%s takes %d numbers" % (kind, _FLOATS[kind]))
            return dist.FloatDistribution(float(numbers[0]), float(numbers[1]), log=kind == "loguniform",
                                          step=float(numbers[2]) if kind == "quniform" else None)
        low, high = _INTS[kind]
        if not low <= len(numbers) <= high or any(not isinstance(n, int) for n in numbers):
            raise ValueError("%s takes %s integers" % (kind, "2 or 3" if low != high else "2"))
        return dist.IntDistribution(numbers[0], numbers[1], log=kind == "logint",
                                    step=numbers[2] if len(numbers) == 3 else 1)
    except ValueError as e:  # Optuna's own checks: low > high, log with low <= 0, a step that does not fit
        raise bad_argument("--space %s: %s" % (name, e)) from None


def _check_range(name, kind, numbers):
    """What Optuna would take and then fail on mid-sweep (internal_error there): a bound that is nan or
    infinite, a number past int64, low above high, a log range that does not start above 0, a step <= 0."""
    hint = "e.g. %s: %s" % (name, _EXAMPLES[kind])
    for n in numbers:
        if isinstance(n, float) and not math.isfinite(n):
            raise bad_argument("--space %s: %s(…) needs finite numbers, got %r" % (name, kind, n), hint)
        if isinstance(n, int) and abs(n) > _INT_MAX:
            raise bad_argument("--space %s: %d is too large (at most 2**63-1)" % (name, n), hint)
    if len(numbers) >= 2 and numbers[0] > numbers[1]:
        raise bad_argument("--space %s: %s(%s, %s): low is above high" % (name, kind, numbers[0], numbers[1]),
                           "write the lower end first: %s(%s, %s)" % (kind, numbers[1], numbers[0]))
    if kind in ("loguniform", "logint") and numbers and numbers[0] <= 0:
        raise bad_argument("--space %s: %s needs a low end above 0, got %s" % (name, kind, numbers[0]), hint)
    if len(numbers) == 3 and numbers[2] <= 0:
        raise bad_argument("--space %s: %s's step must be above 0, got %s" % (name, kind, numbers[2]), hint)


_EXAMPLES = {"uniform": "uniform(0, 0.5)", "loguniform": "loguniform(1e-5, 1e-1)", "quniform": "quniform(0, 1, 0.25)",
             "int": "int(1, 8)", "logint": "logint(1, 1024)"}


def _word(text):
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text.strip("'\"")


def _number(name, text):
    value = _word(text)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad_argument("--space %s: %r is not a number" % (name, text), _HINT)
    return value


def check_placeholders(space, templates):
    """Every {name} in the templates is in the space, and every name of the space is used somewhere: a typo
    either way would sweep nothing, silently."""
    used = {m for text in templates.values() for m in PLACEHOLDER.findall(text)}
    unknown = sorted(used - set(space))
    if unknown:
        flag = next(f for f, text in templates.items() if any("{%s}" % u in text for u in unknown))
        raise bad_argument("--%s uses {%s}, which --space does not define" % (flag, unknown[0]),
                           "--space defines: %s" % ", ".join(space))
    unused = [name for name in space if name not in used]
    if unused:
        raise bad_argument("--space defines %s, which neither --model nor --opt uses" % unused[0],
                           "write {%s} where its value goes, e.g. --opt 'adamw --lr {%s}'" % (unused[0], unused[0]))


def fill(template, params):
    """A template with each {name} replaced by this trial's value: floats written in full (repr), so the
    command a run.json records repeats the trial exactly."""
    return PLACEHOLDER.sub(lambda m: _text(params[m.group(1)]), template)


def _text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def grid(space):
    """GridSampler's search space: every entry must be a choice."""
    ranges = [name for name, d in space.items() if not hasattr(d, "choices")]
    if ranges:
        raise TorchshError("bad_argument", "--sampler grid needs a list of values for every entry; %s is a range"
                           % ranges[0], "write %s: [a, b, c], or use --sampler tpe or random" % ranges[0])
    return {name: list(d.choices) for name, d in space.items()}
