"""What one `torch fit` run does: the objects it trains and every option, checked before any step."""
from dataclasses import dataclass, field
from typing import Callable, Optional

import torch

from torchsh.errors import TorchshError, bad_argument
from torchsh.train.metrics import epoch as fit_metrics

AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}
LOG_FORMATS = ("jsonl", "csv", "tb")  # metrics.jsonl, metrics.csv, TensorBoard's event files (train/logs/tfevents.py)
SAVE_EVERY = 200  # optimizer steps between `last` checkpoints (besides every epoch's end and a stop)


@dataclass
class FitPlan:
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    loader: object                      # torchsh.data.loader.Loader
    loss: Callable                      # a torch.nn.functional loss
    loss_args: dict = field(default_factory=dict)
    epochs: int = 1                     # the run's total: a resumed run finishes the same total
    val: object = None                  # a Loader, evaluated after every epoch
    metrics: tuple = ()                 # names from metrics.METRICS
    sched: object = None                # stepped once per epoch (ReduceLROnPlateau: on the monitored loss)
    clip: Optional[float] = None        # clip_grad_norm_ before every optimizer step
    accum: int = 1                      # batches per optimizer step (each loss / accum)
    autocast: Optional[str] = None      # "bf16" | "fp16" (fp16 adds a GradScaler)
    patience: Optional[int] = None      # stop after this many epochs without improvement of `monitor`
    monitor: Optional[str] = None       # the epoch row key early stopping and `best` watch
    log: Optional[str] = None           # the log folder
    log_format: tuple = LOG_FORMATS     # which of LOG_FORMATS the folder gets (run.json and checkpoints always)
    resume: Optional[str] = None        # "auto" (DIR/last.safetensors when there is one) or a checkpoint path
    save_every: int = SAVE_EVERY
    max_steps: Optional[int] = None     # stop (resumably) once the run's global step reaches this
    command: tuple = ()                 # the command line, for run.json
    loss_name: str = ""
    target_dtype: Optional[torch.dtype] = None  # each batch's target .to(this) before the loss
    target_shape: Optional[tuple] = None  # each target viewed as this per item (train/loss/check.py), or as it is
    task: object = None                 # the model card's task row (contract/tasks.py): how metrics decide
    val_encode: Optional[Callable] = None  # --val's input fields preprocessed as the model's card says
    trial: Optional[dict] = None        # a `torch sweep` trial: study, number, params, seed (run.json keeps it)
    compile_cache: Optional[str] = None  # --compile: the daemon's folder of compiled code; None: eager steps

    def __post_init__(self):
        if self.epochs < 1 or self.accum < 1 or self.save_every < 1:
            raise bad_argument("--epochs, --accum and --save_every must be at least 1")
        if self.max_steps is not None and self.max_steps < 1:
            raise bad_argument("--max_steps must be at least 1")
        if self.autocast is not None and self.autocast not in AUTOCAST:
            raise bad_argument("--autocast takes bf16 or fp16, not %r" % self.autocast)
        if self.patience is not None and self.patience < 1:
            raise bad_argument("--patience must be at least 1")
        if self.compile_cache is not None and self.autocast is not None:
            raise TorchshError("not_supported", "--compile does not go with --autocast", "drop one of them")
        if isinstance(self.optimizer, torch.optim.LBFGS):
            raise bad_argument("fit steps without a closure; LBFGS needs one", "use `torch train_step` for LBFGS")
        if self.resume is not None and self.resume == "auto" and self.log is None:
            raise TorchshError("missing_argument", "--resume auto continues the run in --log DIR",
                               "torch fit … --log runs/1 --resume auto")
        for name in self.metrics:
            fit_metrics.check(name)
        unknown = [f for f in self.log_format if f not in LOG_FORMATS]
        if unknown or not self.log_format:
            raise bad_argument("--log_format %s: not a log format" % ",".join(unknown or ["''"]),
                               "valid: %s (any of them, comma-separated)" % ",".join(LOG_FORMATS))
        self.monitor = self.monitor or ("val_loss" if self.val is not None else "loss")
        numbers = {"loss"} | {m for m in self.metrics if m not in fit_metrics.NOT_A_NUMBER}
        known = numbers | ({"val_" + m for m in numbers} if self.val else set())
        if self.monitor not in known:
            raise bad_argument("--monitor %s is not a column of this run" % self.monitor,
                               "columns: %s" % " ".join(sorted(known)))

    @property
    def device_type(self):
        p = next(self.model.parameters(), None)
        return p.device.type if p is not None else "cpu"

    def lower_is_better(self):
        return self.monitor.removeprefix("val_") in fit_metrics.LOWER_IS_BETTER


def on_device(batch, device, target_dtype=None, target_shape=None):
    """A batch's fields on the model's device: (inputs…, target), the target as --target_dtype (y.to(dtype)) and
    viewed as TARGET_SHAPE per item (y.view(N, *shape), train/loss/check.py)."""
    if not isinstance(batch, (list, tuple)) or len(batch) < 2:
        raise bad_argument("fit needs batches of (inputs…, target); this loader's items have %d field(s)"
                           % (len(batch) if isinstance(batch, (list, tuple)) else 1),
                           "torch data tensors $X $Y makes (input, target) items")
    fields = [t.to(device, non_blocking=True) if isinstance(t, torch.Tensor) else t for t in batch]
    if target_dtype is not None:
        fields[-1] = fields[-1].to(target_dtype)
    if target_shape is not None:
        fields[-1] = fields[-1].view(fields[-1].shape[0] if fields[-1].dim() else 1, *target_shape)
    return fields
