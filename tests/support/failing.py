"""A dataset whose item FAIL_AT raises the TorchshError a damaged file gives (file_error naming a row group): module
level, so DataLoader's worker processes unpickle it by name."""
import torch

from torchsh.errors import TorchshError

FAIL_AT = 5


class FailingRows(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == FAIL_AT:
            raise TorchshError("file_error", "x.parquet row group 1: damaged page", "fix x.parquet")
        return torch.tensor([float(i)])
