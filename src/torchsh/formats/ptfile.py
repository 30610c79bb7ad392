""".pt/.pth files through torch.load(weights_only=True): its restricted unpickler builds tensors and plain
containers only, so nothing is ever unpickled; written with torch.save."""
import torch


def read_object(path):
    """What the file holds: tensors in plain containers (dicts, lists, tuples, numbers, strings)."""
    return torch.load(path, weights_only=True, map_location="cpu")


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
