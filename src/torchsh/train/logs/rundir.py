"""Who may write a `torch fit --log DIR` folder, so that no run is ever lost or silently replaced:

- a DIR that holds a run (any of RUN_FILES, or a TensorBoard events file) is refused (run_exists) before
  anything trains, unless the fit continues it (--resume auto, --resume PATH) or replaces it (--overwrite);
  --resume auto starts afresh only in a DIR without a run (one without a checkpoint to resume is refused:
  its logs would go);
- `--log runs --version` makes runs/version_N, N = 1 + the highest N of a runs/version_N folder (or
  version_N_…), version_0 first (PyTorch Lightning's _get_next_version, its loggers' rule);
- --overwrite moves the old run's files aside (DIR/.replaced-…/, one rename each) while the new run starts:
  a new run that ends (fails, or is stopped) before it wrote a checkpoint puts them back; one that has a
  checkpoint removes them. So the old run is never half deleted: a crash of the daemon meanwhile leaves
  it whole in the hidden folder.
"""
import os
import shutil
import tempfile

from torchsh import fileio
from torchsh.errors import TorchshError
from torchsh.train.logs import tfevents

RUN_FILES = ("run.json", "metrics.jsonl", "metrics.csv", "last.safetensors", "best.safetensors")


def run_files(folder):
    """The files of a run that `folder` holds (none for a missing or empty folder)."""
    try:
        events = sorted(name for name in os.listdir(folder) if name.startswith(tfevents.FILE_PREFIX))
    except OSError:  # missing, or not a folder: no run there
        events = []
    return [name for name in RUN_FILES if os.path.lexists(os.path.join(folder, name))] + events


def refuse_a_run_there(folder, shown):
    """run_exists when `folder` holds a run (the caller neither continues nor replaces it)."""
    held = run_files(folder)
    if held:
        raise TorchshError("run_exists", "%s holds a run (%s)" % (shown, ", ".join(held)),
                           "continue it with --resume auto, replace it with --overwrite, or give another --log "
                           "(--log DIR --version makes DIR/version_N)")


def refuse_a_run_without_checkpoint(folder, shown):
    """--resume auto where a run ended before its first checkpoint: a fresh start would drop its logs."""
    held = run_files(folder)
    if held and "last.safetensors" not in held:
        raise TorchshError("run_exists", "%s holds a run (%s) but no last.safetensors to resume from"
                           % (shown, ", ".join(held)), "replace it with --overwrite, or give another --log")


def new_version(parent):
    """Make and return parent/version_N, N one more than the highest there (version_0 in a new folder)."""
    try:
        os.makedirs(parent, exist_ok=True)
        taken = [int(name.split("_")[1]) for name in os.listdir(parent)  # Lightning's _get_next_version
                 if name.startswith("version_") and name.split("_")[1].isdecimal()
                 and os.path.isdir(os.path.join(parent, name))]
        n = max(taken) + 1 if taken else 0
        while True:
            folder = os.path.join(parent, "version_%d" % n)
            try:
                os.mkdir(folder)
                return folder
            except FileExistsError:  # another fit took N meanwhile (or a file has that name)
                n += 1
    except OSError as e:
        raise fileio.file_error(parent, "make a version folder in", e) from None


class Replacing:
    """--overwrite: the old run's files moved aside into a hidden folder of DIR while the new run starts."""

    def __init__(self, folder):
        self.folder, self.moved = folder, []
        try:
            self.aside = tempfile.mkdtemp(prefix=".replaced-", dir=folder)
            for name in run_files(folder):
                os.rename(os.path.join(folder, name), os.path.join(self.aside, name))
                self.moved.append(name)
        except OSError as e:
            if self.moved:
                self._put_back()
            raise fileio.file_error(folder, "move the old run aside in", e) from None

    def settle(self):
        """The new run has ended: one without a checkpoint (it failed, or was stopped before its first step)
        gives the folder back to the old run; one with a checkpoint keeps it, and the old run goes."""
        if not os.path.exists(os.path.join(self.folder, "last.safetensors")):
            for name in run_files(self.folder):
                os.remove(os.path.join(self.folder, name))
            self._put_back()
        shutil.rmtree(self.aside, ignore_errors=True)

    def _put_back(self):
        for name in self.moved:
            os.rename(os.path.join(self.aside, name), os.path.join(self.folder, name))
        self.moved = []
