#!/usr/bin/env bash
# Linear regression from bash: fit y = 2x + 1 with torch.nn.Linear and SGD + momentum, one shell
# command per step of PyTorch's loop (zero_grad, forward, loss, backward, step).
# `torch scope -- …` frees the per-step handles (predictions, losses) when the step ends, so the
# daemon holds the same objects after 1 step or 1,000.
#   STEPS=200 examples/regression.sh
set -euo pipefail
STEPS=${STEPS:-100}

torch manual_seed 42 >/dev/null
x=$(torch tensor '[[0.0],[1.0],[2.0],[3.0]]'); y=$(torch tensor '[[1.0],[3.0],[5.0],[7.0]]')
model=$(torch nn linear 1 1)
opt=$(torch optim sgd $model --lr 0.05 --momentum 0.9)

loss() { torch scope -- bash -c "torch forward $model $x | torch mse_loss $y | torch item"; }

echo "regression: fitting y = 2x + 1 with $STEPS steps of SGD (lr 0.05, momentum 0.9)"
for i in $(seq "$STEPS"); do
  torch scope -- bash -c "torch zero_grad $opt; torch forward $model $x | torch mse_loss $y | torch backward; torch step $opt"
  if (( i % 20 == 0 )); then echo "  step $i  loss $(loss)"; fi
done

final=$(loss)
read -r w b < <(torch nn parameters $model | while read -r p; do torch item $p; done | xargs)
echo "regression: final loss $final, weight $w, bias $b"
awk -v l="$final" 'BEGIN { exit !(l < 1e-3) }' || { echo "regression: loss did not go below 1e-3" >&2; exit 1; }
