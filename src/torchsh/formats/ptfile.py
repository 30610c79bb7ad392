""".pt/.pth files through torch.load(weights_only=True): its restricted unpickler builds tensors and plain
containers only, so nothing is ever unpickled; written with torch.save. read_trusted adds the classes a
caller allows by name (`nn load --trust`, trusted.py), and refuses a pickle needing others, naming them and
which of them --trust could allow."""
import pickle  # only for its exception type: weights_only refuses a global with UnpicklingError

import torch

from torchsh.errors import TorchshError
from torchsh.formats import trusted as trust_policy


def read_object(path):
    """What the file holds: tensors in plain containers (dicts, lists, tuples, numbers, strings)."""
    return torch.load(path, weights_only=True, map_location="cpu")


def read_trusted(source, where, trusted, unsafe_globals):
    """read_object with the classes trusted allowed too (torch.serialization.safe_globals).
    A pickle that needs other globals is refused naming them: unsafe_globals(source) finds them by
    PyTorch's static scan of the opcodes, which runs none. source: a path or a file object; where names it."""
    try:
        with torch.serialization.safe_globals(list(trusted)):
            return read_object(source)
    except pickle.UnpicklingError:
        if hasattr(source, "seek"):
            source.seek(0)
        needed = unsafe_globals(source)
        if not needed:
            raise
    raise TorchshError("file_error", "%s needs globals beyond weights_only: %s; nothing was unpickled"
                       % (where, " ".join(needed)), _trust_hint(needed))


def _trust_hint(needed):
    """Which of the globals a pickle needs --trust could allow (classes that build data), and which never."""
    may, never = trust_policy.classify(needed)
    never_text = "never trusted: %s (functions, or classes that run code or reach the system)" % " ".join(never)
    if not may:
        return "%s; this file is no checkpoint: do not load it" % never_text
    return "`--trust %s` allows %s, if you trust this file: their constructors run with its values%s" % (
        ",".join(may), "that class" if len(may) == 1 else "those classes", "; " + never_text if never else "")


def read(path):
    """{name: tensor}: a lone tensor under "", a dict's own names, a list's indices; ValueError for the rest."""
    obj = read_object(path)
    if isinstance(obj, torch.Tensor):
        return {"": obj}
    if isinstance(obj, dict) and all(isinstance(v, torch.Tensor) for v in obj.values()):
        return dict(obj)
    if isinstance(obj, (list, tuple)) and all(isinstance(v, torch.Tensor) for v in obj):
        return {str(i): v for i, v in enumerate(obj)}
    raise ValueError("the file holds %s, not tensors" % type(obj).__name__)


def write(path, named):
    """One tensor saved unnamed (`torch save T f.pt` -> torch.load gives the tensor), else the dict."""
    values = list(named.values())
    torch.save(values[0] if len(values) == 1 and list(named) == ["0"] else named, path)
