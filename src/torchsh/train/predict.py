"""`torch predict MODEL DATASET`: the model over a dataset in order, one row per item that says where the
item came from and what the model made of it.

Provenance   `row`: the item's 0-based row in the file it was opened from (pandas' default index; a
             split's items keep their rows in the whole file), or `path`: the image file of an image
             folder's item.
Inputs       an item's fields as `torch fit` takes them: (inputs…, target) with the target ignored; an
             item of one field is all input (an unlabeled table).
Kind         classification when classes are known (the model's, from the data `torch fit` trained it
             on: data/meaning.py, else the dataset's), or when the output has k > 1 columns and the
             target, if any, is an integer: `prediction` is argmax's class, by name when
             known, and --proba adds softmax's probabilities, one column per class. Otherwise regression:
             `prediction` is the output (one column), or `output_0…` (several).
A one-hot column whose categories differ from the model's is refused (its columns would mean other things).
Inputs are standardized with the statistics the model was trained under (`fit` keeps them, meaning.py)
when the dataset has none of its own. The model runs in eval mode under torch.inference_mode, batch by
batch (DataLoader's batches; a table's sliced from its tensors, data/batches.py); its mode is restored after.
The table is made column by column (values()), and written that way (formats/rowsfile.py).
"""
from dataclasses import dataclass

import torch
import torch.utils.data

from torchsh.data import meaning, transforms
from torchsh.data.batches import sliced_batches
from torchsh.data.datasets import FileDataset, known, wrapped_datasets
from torchsh.errors import TorchshError, bad_argument


@dataclass
class Outputs:
    key: str          # "row" or "path"
    keys: list        # one row number or path per item
    output: torch.Tensor  # every item's output, [N] or [N, k], on the CPU
    classes: list     # class names, or None (then indices)
    classify: bool


def run(model, dataset, batch_size):
    """Outputs of model over the dataset's items in order (eval mode and inference_mode, then restored)."""
    if batch_size < 1:
        raise bad_argument("--batch_size must be 1 or more, got %d" % batch_size)
    _check_categories(model, dataset)
    dataset = standardized_as_trained(model, dataset)
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
    classes = meaning.of_model(model).get("classes") or known(dataset, "classes")
    return Outputs(key, keys, output, list(classes) if classes else None, _classifies(output, classes, target))


def _check_categories(model, dataset):
    """One-hot columns encode the categories the model was trained on, in its order, or predict refuses."""
    trained, given = meaning.of_model(model).get("categories") or {}, known(dataset, "categories") or {}
    for column in sorted(set(trained) & set(given)):
        if list(trained[column]) != list(given[column]):
            raise TorchshError("state_mismatch", "column %r is one-hot encoded over %s here, and the model was "
                               "trained on %s" % (column, list(given[column]), list(trained[column])),
                               "every category must appear in the data for the same columns; predict on rows "
                               "opened together with the training data")


def standardized_as_trained(model, dataset):
    """The dataset, standardized with the statistics the model was trained under (`data transform
    --standardize` before `fit`) when it has none of its own: raw rows in, as the model saw them."""
    stats = meaning.of_model(model).get("standardization")
    if not stats or known(dataset, "standardization") or not len(dataset):
        return dataset
    item = dataset[0] if isinstance(dataset[0], (tuple, list)) else (dataset[0],)
    if not isinstance(stats.get("field"), int) or not 0 <= stats["field"] < len(item):
        raise TorchshError("shape_mismatch", "the model was trained on items whose field %s was standardized; these "
                           "items have %d field(s)" % (stats.get("field"), len(item)), "open the data as for fit")
    step = transforms.Step("standardize", stats["field"], (stats["mean"], stats["std"]))
    return transforms.TransformedDataset(dataset, [step])


def _classifies(output, classes, target):
    if output.dim() > 2:
        raise TorchshError("shape_mismatch", "predict writes one row per item, and the model's output per item "
                           "has shape %s" % list(output.shape[1:]), "end the model with one value or k class scores")
    width = output.shape[1] if output.dim() == 2 else 1
    if classes:
        if width != len(classes):
            raise TorchshError("shape_mismatch", "the model gives %d values per item for %d classes (%s)"
                               % (width, len(classes), ", ".join(classes[:5])),
                               "predict with the model trained on these classes")
        return True
    if width == 1:
        return False  # one value per item and no classes: a regression's output
    return target is None or not (target.is_floating_point() or target.is_complex())


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
        names = _class_names(outputs)
        return [outputs.key, "prediction"] + ([_proba_column(n) for n in names] if proba else [])
    if proba:
        raise bad_argument("--proba gives class probabilities, and this model's output is a regression's",
                           "it is one when the dataset or the model knows classes, or the target is an integer")
    width = outputs.output.shape[1] if outputs.output.dim() == 2 else 1
    return [outputs.key] + (["prediction"] if width == 1 else ["output_%d" % j for j in range(width)])


def values(outputs, proba):
    """The table's columns, in columns()'s order, one list each: the rows or paths, the predictions (a
    class's name by one index into the names) and the probabilities (or a regression's outputs)."""
    out = outputs.output
    if outputs.classify:
        scores = out if out.dim() == 2 else out.reshape(-1, 1)
        predicted = scores.argmax(1).tolist()
        if outputs.classes:
            class_names = _class_names(outputs)
            predicted = [class_names[i] for i in predicted]
        return [outputs.keys, predicted] + (torch.softmax(scores, dim=1).T.tolist() if proba else [])
    return [outputs.keys] + out.reshape(out.shape[0], -1).T.tolist()


def _class_names(outputs):
    width = outputs.output.shape[1] if outputs.output.dim() == 2 else 1
    return [str(c) for c in outputs.classes] if outputs.classes else [str(j) for j in range(width)]


def _proba_column(name):
    """A probability column is named after its class; `proba_NAME` where a class is called row/path/prediction."""
    return "proba_" + name if name in ("row", "path", "prediction") else name
