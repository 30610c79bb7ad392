"""`torch fit` writes the model's card from what it trains on: the loader's dataset (its fields' shapes, dtypes,
columns, one-hot categories, standardization and classes), the loss, and one item's output.

The output's shape comes from probe(): the model in eval mode under inference_mode on item 0 alone (no
dropout, no batch-norm update, no random number drawn, no graph), its mode put back. A model whose parameters
are not made yet (a lazy module) is not probed: its first training batch makes them, as in PyTorch.
"""
import torch
from torch.nn.parameter import is_lazy

from torchsh.contract import card as cards, tasks
from torchsh.data.datasets import known
from torchsh.vocab import dtype_name


def sample(dataset):
    """(inputs, target) of item 0, or None (an empty dataset, an item that is not (inputs…, target))."""
    if len(dataset) == 0:
        return None
    item = dataset[0]
    if not isinstance(item, (tuple, list)) or len(item) < 2 or not all(isinstance(t, torch.Tensor) for t in item):
        return None
    return list(item[:-1]), item[-1]


def probe(model, inputs):
    """One item's output shape (a list) for INPUTS (one item's fields), or None where the model cannot say
    (lazy parameters, an output that is not one tensor, a forward that fails: training will say why)."""
    if any(is_lazy(p) for p in model.parameters()):
        return None
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            out = model(*[t.unsqueeze(0).to(device) for t in inputs])
    except Exception:  # the training step raises it again, in PyTorch's words and with the shapes
        return None
    finally:
        model.train(was_training)
    return list(out.shape[1:]) if isinstance(out, torch.Tensor) and out.dim() >= 1 else None


def learn(dataset, loss, item, output_shape, target_dtype=None, target_shape=None):
    """The card of a model fit on DATASET with LOSS; ITEM is sample()'s, OUTPUT_SHAPE probe()'s (or None)."""
    card = {"inputs": _inputs(dataset, item), "loss": loss}
    for key in ("classes", "categories"):
        value = known(dataset, key)
        if value:
            card[key] = dict(value) if isinstance(value, dict) else [str(c) for c in value]
    stats = known(dataset, "standardization")
    if stats:
        card["preprocessing"] = [dict(stats, kind="standardize")]
    if item is not None:
        target = item[1]
        shape = list(target_shape) if target_shape is not None else list(target.shape)
        names = known(dataset, "field_names") or []
        card["target"] = {"name": str(names[-1]) if names else "target", "shape": shape,
                          "dtype": dtype_name(target_dtype or target.dtype)}
    if output_shape is not None:
        card["output"] = {"shape": list(output_shape)}
        task = tasks.infer(loss, output_shape, card.get("target", {}).get("shape", []))
        if task is not None:
            card["task"], card["decision"] = task.name, task.decision
            if task.name == "binary" and "classes" not in card:
                card["classes"] = ["0", "1"]
    return cards.valid(card)


def _inputs(dataset, item):
    if item is None:
        return []
    names = known(dataset, "field_names") or []
    columns = known(dataset, "field_columns") or []
    out = []
    for k, t in enumerate(item[0]):
        field = {"name": str(names[k]) if k < len(names) else str(k), "shape": list(t.shape),
                 "dtype": dtype_name(t.dtype)}
        if k < len(columns) and columns[k]:
            field["columns"] = list(columns[k])
        out.append(field)
    return out
