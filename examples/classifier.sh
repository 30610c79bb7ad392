#!/usr/bin/env bash
# A small classifier from bash: points inside or outside a circle, an MLP trained with
# cross_entropy, AdamW and a cosine learning-rate schedule (the fused `torch train_step`, one
# command per step). Then a checkpoint (no pickle: safetensors + JSON), reloaded in a brand-new
# daemon on its own socket, predicts the test set with the same accuracy.
#   STEPS=300 examples/classifier.sh
set -euo pipefail
STEPS=${STEPS:-200}
work=$(mktemp -d "${TMPDIR:-/tmp}/torchsh-classifier.XXXXXX")
trap 'TORCHSH_SOCKET="$work/fresh.sock" torch daemon stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

# data: label 1 when x0^2 + x1^2 > 1.4 (about half the points), a train and a test set
torch manual_seed 0 >/dev/null
labels() { torch pow "$1" 2 | torch sum --dim 1 | torch gt 1.4 | torch to --dtype int64; }
x=$(torch randn '[512,2]'); y=$(labels $x)
xt=$(torch randn '[512,2]'); yt=$(labels $xt)

build() {  # the same architecture, optimizer and schedule, in whichever daemon TORCHSH_SOCKET names
  model=$(torch nn sequential 'linear 2 32' relu 'linear 32 32' relu 'linear 32 2')
  opt=$(torch optim adamw $model --lr 0.01)
  sched=$(torch sched cosine $opt --T_max "$STEPS")
}
accuracy() {  # predict runs in eval mode under no-grad
  torch scope -- bash -c "torch predict $model $1 | torch argmax --dim 1 | torch eq $2 | torch to --dtype float32 | torch mean | torch item"
}

build
echo "classifier: MLP 2-32-32-2, cross_entropy, adamw (lr 0.01) + cosine schedule, $STEPS steps"
for i in $(seq "$STEPS"); do
  loss=$(torch train_step $model $opt $x $y --loss cross_entropy --sched $sched)
  if (( i % 50 == 0 )); then echo "  step $i  loss $loss  lr $(torch sched lr $sched)  test accuracy $(accuracy $xt $yt)"; fi
done
acc=$(accuracy $xt $yt)
echo "classifier: test accuracy $acc"
awk -v a="$acc" 'BEGIN { exit !(a >= 0.95) }' || { echo "classifier: accuracy below 95%" >&2; exit 1; }

torch checkpoint save "$work/classifier.safetensors" $model $opt $sched
torch save $xt "$work/test-x.npy"; torch save $yt "$work/test-y.npy"
echo "classifier: checkpoint saved; reloading it in a fresh daemon"
export TORCHSH_SOCKET="$work/fresh.sock"
build
torch checkpoint load "$work/classifier.safetensors" $model $opt $sched
xt=$(torch load "$work/test-x.npy"); yt=$(torch load "$work/test-y.npy")
again=$(accuracy $xt $yt)
echo "classifier: fresh daemon, reloaded checkpoint: test accuracy $again"
[ "$again" = "$acc" ] || { echo "classifier: the reloaded model predicts differently" >&2; exit 1; }
