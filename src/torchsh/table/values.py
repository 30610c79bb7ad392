"""Reading a word's value as what an op takes: an int64, a float, a list of numbers, a tensor
literal (with "NaN"/"Infinity" spelled as strings). Each failure is a bad_argument naming the word."""
import torch

from torchsh.errors import bad_argument, from_torch_exception

INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1


def check_int(value, text):
    """An integer PyTorch can take (int64), or bad_argument naming the range (not `Overflow when unpacking`)."""
    if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= INT64_MAX:
        shown = text if len(text) <= 40 else text[:20] + "…(%d characters)" % len(text)
        raise bad_argument("%s is out of range for a 64-bit integer" % shown,
                           "integers run from -2**63 to 2**63-1; write a float (1e23) where a float will do")
    return value


def as_float(value, text):
    try:
        return float(value)
    except OverflowError:
        raise bad_argument("%s is out of range for a float" % text[:60], "floats reach about 1.8e308") from None


NONFINITE_STRINGS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf"),
                     "nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def nonfinite_strings(data):
    """A JSON tensor literal with "NaN", "Infinity", "-Infinity" (what `torch value` prints) as floats.
    Any other string is no number: bad_argument, naming it."""
    if isinstance(data, list):
        return [nonfinite_strings(x) for x in data] if any(isinstance(x, (str, list)) for x in data) else data
    if isinstance(data, str):
        if data in NONFINITE_STRINGS:
            return NONFINITE_STRINGS[data]
        raise bad_argument("%r is not a number" % data[:60],
                           'numbers are JSON numbers; only "NaN", "Infinity" and "-Infinity" may be strings')
    return data


class NumberList(list):
    """A big JSON array of numbers, decoded off the tensor thread (api/bigbody.py): the list itself, the numpy
    array of its numbers (None when they make no tensor: ragged, not all numbers) and the JSON text it was read
    from. tensor_from_json makes its tensor from the array: what torch.tensor(the list) makes, without walking
    the list (5M numbers: 16 ms instead of ~1 s on the tensor thread)."""
    __slots__ = ("array", "text")

    def __init__(self, items, array, text):
        super().__init__(items)
        self.array, self.text = array, text


def tensor_from_json(value, text):
    """A number, boolean or nested list as a tensor; ragged, mixed or out-of-range data is a bad_argument."""
    if type(value) is NumberList and value.array is not None:  # float64: the default dtype, as for a list
        return torch.tensor(value.array, dtype=torch.get_default_dtype() if value.array.dtype.kind == "f" else None)
    try:
        return torch.tensor(nonfinite_strings(value))
    except (ValueError, TypeError, RuntimeError, OverflowError) as e:
        err = from_torch_exception(e)
        if err.code != "bad_argument":
            err = bad_argument("cannot make a tensor of %s: %s" % (text[:60], err.message))
        raise err from None


def as_list(kind, tok):
    """An int[], float[] or bool[] from a JSON list, `1,2` text, or a single int (dim=1, size=5)."""
    if tok.cls == "list":
        items = tok.value
    elif tok.cls == "str":
        try:
            items = [float(x) if kind == "float_list" else int(x) for x in tok.value.split(",") if x.strip()]
        except ValueError:
            raise bad_argument("cannot read %r as a list of numbers" % tok.text, "write it as JSON: '[1,2]'") from None
    else:  # a single int for int[]: PyTorch takes it as is (dim=1, size=5)
        return check_int(tok.value, tok.text) if tok.cls == "int" else tok.value
    want = {"int_list": int, "float_list": (int, float), "bool_list": bool}[kind]
    if not all(isinstance(x, want) and not (kind == "int_list" and isinstance(x, bool)) for x in items):
        raise bad_argument("%s holds values that are not %s" % (tok.text[:60], kind.replace("_list", "s")))
    if kind == "int_list":
        for x in items:
            check_int(x, str(x))
    return [as_float(x, tok.text) for x in items] if kind == "float_list" else items
