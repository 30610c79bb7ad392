#!/usr/bin/env bash
# Training from a data file with `torch fit`: points inside or outside a circle, written to .npy files,
# opened as a dataset (memory-mapped), split 90/10, fed through PyTorch's DataLoader. The run logs to a
# folder (metrics.jsonl/csv, run.json, `last` and `best` checkpoints), is cut off mid-run, the daemon is
# stopped (everything in memory is gone), and a fresh daemon resumes it from the log folder to the end:
# the result is the one an uninterrupted run gives. Then the curves, in the terminal (and as a PNG when
# matplotlib is installed). It runs a daemon of its own (its socket in a temp folder), since it stops it.
#   EPOCHS=6 examples/fit.sh
set -euo pipefail
EPOCHS=${EPOCHS:-6}
work=$(mktemp -d "${TMPDIR:-/tmp}/torchsh-fit.XXXXXX")
export TORCHSH_SOCKET="$work/torchd.sock"
trap 'torch daemon stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

# the data file: 20,000 points, label 1 when x0^2 + x1^2 > 1.4 (about half)
torch manual_seed 0 >/dev/null
x=$(torch randn '[20000,2]')
torch save $x "$work/x.npy" >/dev/null
torch pow $x 2 | torch sum --dim 1 | torch gt 1.4 | torch to --dtype int64 | torch save - "$work/y.npy" >/dev/null

setup() {  # data, model, optimizer and loaders, the same way in whichever daemon runs
  torch manual_seed 0 >/dev/null
  data=$(torch data open "$work/x.npy" "$work/y.npy")
  read -r train val < <(torch data split $data 0.9 0.1 --seed 0 | xargs)
  loader=$(torch data loader $train --batch_size 64 --shuffle --seed 0)
  val_loader=$(torch data loader $val --batch_size 1000)
  model=$(torch nn sequential 'linear 2 32' relu 'linear 32 32' relu 'linear 32 2')
  opt=$(torch optim adamw $model --lr 0.01)
}
fit() {
  torch fit $model $opt $loader --loss cross_entropy --epochs "$EPOCHS" --val $val_loader --metrics accuracy \
    --log "$work/run" "$@"
}

setup
torch data info $data
echo "fit: MLP 2-32-32-2, adamw (lr 0.01), batch 64, $EPOCHS epochs; cut off after 600 steps"
fit --max_steps 600
torch daemon stop >/dev/null
echo "fit: daemon stopped; a fresh one resumes from $work/run"
setup
fit --resume auto

echo
torch plot "$work/run" --x epoch --y loss,val_loss --height 10
if torch plot "$work/run" --png "$work/loss.png" >/dev/null 2>&1; then echo "fit: wrote a PNG of the curves too"; fi
acc=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "val_accuracy") c = i } $1 == "epoch" { a = $c }
               END { print a }' "$work/run/metrics.csv")   # the last epoch's
echo "fit: validation accuracy $acc"
awk -v a="$acc" 'BEGIN { exit !(a >= 0.95) }' || { echo "fit: validation accuracy below 95%" >&2; exit 1; }
