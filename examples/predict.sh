#!/usr/bin/env bash
# Your own table, your own predictions: an iris-like CSV with string labels (three flower species, four
# measurements; generated here), opened with `--target species` (class indices of the sorted names), split,
# standardized (statistics learned on the training part only), trained with `torch fit`, then predicted:
# `torch predict --out preds.csv` writes one row per item, its `row` in the CSV (0-based, as pandas numbers
# rows), so the predictions join back to the input with awk. Last, new rows without labels: the model knows
# its class names and the statistics it was trained under (fit keeps them), so raw rows get named species.
set -euo pipefail
work=$(mktemp -d "${TMPDIR:-/tmp}/torchsh-predict.XXXXXX")
export TORCHSH_SOCKET="$work/torchd.sock"
trap 'torch daemon stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

# 150 flowers, 50 per species, each a blob around its own centre (cm)
awk 'BEGIN { srand(7); print "sepal_length,sepal_width,petal_length,petal_width,species"
  split("setosa versicolor virginica", name, " ")
  split("5.0 3.4 1.5 0.2  5.9 2.8 4.3 1.3  6.6 3.0 5.6 2.0", c, " ")
  for (i = 0; i < 150; i++) { k = i % 3; printf "%.1f,%.1f,%.1f,%.1f,%s\n", c[4*k+1] + (rand()-0.5) * 0.6,
    c[4*k+2] + (rand()-0.5) * 0.6, c[4*k+3] + (rand()-0.5) * 0.6, c[4*k+4] + (rand()-0.5) * 0.3, name[k+1] } }' \
  > "$work/iris.csv"

torch manual_seed 0 >/dev/null
data=$(torch data open "$work/iris.csv" --target species)
torch data info $data
read -r train val < <(torch data split $data 0.8 0.2 --seed 0 | xargs)
train=$(torch data transform $train --standardize)
val=$(torch data transform $val --standardize_like $train)
model=$(torch nn sequential 'linear 4 16' relu 'linear 16 3')
opt=$(torch optim adam $model --lr 0.05)
loader=$(torch data loader $train --batch_size 16 --shuffle --seed 0)
torch fit $model $opt $loader --loss cross_entropy --epochs 15 --log "$work/run" 2>/dev/null | sed -n '1p;$p'
echo "predict: run.json keeps the classes: $(tr -d ' \n' < "$work/run/run.json" | grep -o '"classes":\[[^]]*\]')"

torch predict $model $val --proba --out "$work/preds.csv"
echo "predict: the first predictions, joined to their rows of iris.csv"
# row r of preds.csv is line r + 2 of iris.csv (a header line, rows counted from 0)
awk -F, 'NR == FNR { if (FNR > 1) species[FNR - 2] = $5; next }
         FNR > 1 { total++; right += ($2 == species[$1]); if (total <= 5) print "  row " $1 ": " $2 " (is " species[$1] ")" }
         END { printf "predict: validation accuracy %.3f (%d rows)\n", right / total, total }' \
  "$work/iris.csv" "$work/preds.csv"

cut -d, -f1-4 "$work/iris.csv" | head -4 > "$work/new.csv"   # new flowers: no species column
echo "predict: unlabeled rows, raw measurements"
torch predict $model $(torch data open "$work/new.csv")
