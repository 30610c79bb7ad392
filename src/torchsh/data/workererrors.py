"""A TorchshError raised in a DataLoader worker process, brought back to the daemon as itself.

DataLoader re-raises a worker's exception in the parent as `type(e)(text)`, the text its traceback; a TorchshError
cannot be rebuilt from text alone (its code, its hint), so the parent would see a RuntimeError (`torch_error`:
"Caught TorchshError in DataLoader worker process 0") where the user needs `file_error` naming the file and the row
group. So a worker reads through WorkerReads, which turns a TorchshError into a WorkerError whose text ends with the
error as one JSON line, and the loader (data/loader.py EpochBatches) turns that back into the TorchshError.
"""
import json
import re

import torch.utils.data

from torchsh.errors import TorchshError

_MARK = "torchsh-error:"
_CARRIED = re.compile(re.escape(_MARK) + r"(\{.*\})\s*$", re.M)


class WorkerError(Exception):
    """A TorchshError on its way out of a worker (its text carries it; DataLoader rebuilds this from the text)."""

    @classmethod
    def carrying(cls, error):
        return cls(_MARK + json.dumps({"code": error.code, "message": error.message, "hint": error.hint}))

    def torchsh_error(self):
        """The TorchshError this carries (the last one its text holds)."""
        found = _CARRIED.findall(str(self))
        fields = json.loads(found[-1])
        return TorchshError(fields["code"], fields["message"], fields["hint"])


class WorkerReads(torch.utils.data.Dataset):
    """DATASET as a worker reads it: the same items, a TorchshError raised as a WorkerError."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, index):
        try:
            return self.dataset[index]
        except TorchshError as e:
            raise WorkerError.carrying(e) from None

    def __getitems__(self, indices):
        """A batch as DataLoader's fetcher reads it: the dataset's own __getitems__, or its items one by one."""
        read = getattr(self.dataset, "__getitems__", None)
        try:
            return read(indices) if read else [self.dataset[i] for i in indices]
        except TorchshError as e:
            raise WorkerError.carrying(e) from None
