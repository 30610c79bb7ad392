"""`torch predict MODEL DATASET`: the model over a dataset in order, one row per item that says where the
item came from and what the model made of it.

Provenance   `row`: the item's 0-based row in the file it was opened from (pandas' default index; a
             split's items keep their rows in the whole file), or `path`: the image file of an image
             folder's item.
Inputs       an item's fields as `torch fit` takes them: (inputs…, target) with the target ignored; an
             item of one field is all input (an unlabeled table).
Kind         the model's card says (contract/: the task `torch fit` recorded): a multiclass model's
             `prediction` is argmax's class, a binary one's (one logit) is class 1 where the logit is
             over 0, each by name when known; --proba adds the probabilities (softmax; sigmoid's 1 - p and
             p), one column per class. A regression's `prediction` is the output (one column), or
             `output_0…` (several). A model without a task is read as before (contract/decode.task_of).
Inputs go through the card (contract/encode.py): the fields, columns, one-hot categories, shapes and dtypes
it was trained on, or a refusal with the fix; raw rows are standardized with the training statistics. The
model runs in eval mode under torch.inference_mode, batch by batch (DataLoader's batches; a table's sliced
from its tensors, data/batches.py); its mode is restored after.
The table is made column by column (values()), and written that way (formats/rowsfile.py).
"""
from dataclasses import dataclass

import torch
import torch.utils.data

from torchsh.contract import card as cards, decode, encode
from torchsh.data.batches import sliced_batches
from torchsh.data.datasets import FileDataset, known, wrapped_datasets
from torchsh.errors import bad_argument


@dataclass
class Outputs:
    key: str          # "row" or "path"
    keys: list        # one row number or path per item
    output: torch.Tensor  # every item's output, [N] or [N, k], on the CPU
    task: object      # contract/tasks.py's row that decides
    names: list       # the class names the task decides among (None for a regression)

    @property
    def classify(self):
        return self.task.classifies


def run(model, dataset, batch_size):
    """Outputs of model over the dataset's items in order (eval mode and inference_mode, then restored)."""
    if batch_size < 1:
        raise bad_argument("--batch_size must be 1 or more, got %d" % batch_size)
    card = cards.of_model(model)
    dataset = encode.dataset(card, dataset)
    batches = sliced_batches(dataset, batch_size)  # a table's: slices of its tensors, not item by item
    if batches is None:
        batches = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=False)
    else:  # the one draw a DataLoader's iterator takes (its base seed): later random numbers stay as they were
        torch.empty((), dtype=torch.int64).random_()
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    was_training, outputs, target = model.training, [], None
    model.eval()
    try:
        with torch.inference_mode():
            for batch in batches:
                fields = list(batch) if isinstance(batch, (tuple, list)) else [batch]
                if len(fields) > 1:
                    target = fields.pop()
                out = model(*[f.to(device) if isinstance(f, torch.Tensor) else f for f in fields])
                if not isinstance(out, torch.Tensor):
                    raise bad_argument("predict needs a model that returns one tensor, this one returns %s"
                                       % type(out).__name__, "`torch forward` runs it on a batch")
                outputs.append(out.detach().cpu())
    finally:
        model.train(was_training)
    output = torch.cat(outputs) if outputs else torch.empty(0)
    key, keys = provenance(dataset)
    # the model's classes name its outputs; the dataset's name its labels (the same, for the data it was fit on)
    classes = card.get("classes") or known(dataset, "classes")
    task = decode.task_of(card, output, classes, target)
    names = decode.class_names(card, task, output, classes) if task.classifies else None
    return Outputs(key, keys, output, task, names)


def provenance(dataset):
    """("row", [row numbers]) or ("path", [image files]): where each item of the dataset came from."""
    indices = list(range(len(dataset)))
    for d in wrapped_datasets(dataset):
        if isinstance(d, torch.utils.data.Subset):
            indices = [int(d.indices[i]) for i in indices]
        if isinstance(d, FileDataset):
            paths = next((f.paths for f in d.fields if hasattr(f, "paths")), None)
            if paths is not None:
                return "path", [paths[i] for i in indices]
    return "row", indices


def columns(outputs, proba):
    """The table's column names, in order."""
    if outputs.classify:
        return [outputs.key, "prediction"] + ([_proba_column(n) for n in outputs.names] if proba else [])
    if proba:
        raise bad_argument("--proba gives class probabilities, and this model's output is a regression's",
                           "it is one when the dataset or the model knows classes, or the target is an integer")
    width = outputs.output.shape[1] if outputs.output.dim() == 2 else 1
    return [outputs.key] + (["prediction"] if width == 1 else ["output_%d" % j for j in range(width)])


def values(outputs, proba):
    """The table's columns, in columns()'s order, one list each: the rows or paths, the predictions (the
    decided class's name) and the probabilities (or a regression's outputs)."""
    out = outputs.output
    if outputs.classify:
        predicted = decode.decided(outputs.task, outputs.names, out)
        return [outputs.keys, predicted] + (outputs.task.proba(out).T.tolist() if proba else [])
    return [outputs.keys] + out.reshape(out.shape[0], -1).T.tolist()


def _proba_column(name):
    """A probability column is named after its class; `proba_NAME` where a class is called row/path/prediction."""
    return "proba_" + name if name in ("row", "path", "prediction") else name
