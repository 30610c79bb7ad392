#!/usr/bin/env bash
# An image folder, classified, with each prediction named by its file: images in torchvision's ImageFolder
# layout (ROOT/CLASS/IMAGE; here 8×8 plain-text PPM files written by awk: dark and bright noise), opened
# with `torch data open` (classes: the sorted folder names), split, trained with `torch fit`, then
# `torch predict --out preds.csv` gives one row per image: its path and the class predicted, so the
# right answer is in the path itself. Needs the `images` extra (Pillow).
set -euo pipefail
work=$(mktemp -d "${TMPDIR:-/tmp}/torchsh-images.XXXXXX")
export TORCHSH_SOCKET="$work/torchd.sock"
trap 'torch daemon stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

mkdir -p "$work/pictures/bright" "$work/pictures/dark"
awk -v root="$work/pictures" 'BEGIN { srand(3)
  for (i = 0; i < 40; i++) { kind = i % 2 ? "bright" : "dark"; base = i % 2 ? 150 : 40
    file = sprintf("%s/%s/%02d.ppm", root, kind, i); print "P3 8 8 255" > file
    for (p = 0; p < 64; p++) printf "%d %d %d\n", base + int(rand() * 60), base + int(rand() * 60), base + int(rand() * 60) > file
    close(file) } }'

torch manual_seed 0 >/dev/null
data=$(torch data open "$work/pictures")
torch data info $data
read -r train val < <(torch data split $data 0.75 0.25 --seed 0 | xargs)
model=$(torch nn sequential flatten 'linear 192 2')
opt=$(torch optim adam $model --lr 0.05)
loader=$(torch data loader $train --batch_size 10 --shuffle --seed 0)
torch fit $model $opt $loader --loss cross_entropy --epochs 30 2>/dev/null | sed -n '1p;$p'

torch predict $model $val --out "$work/preds.csv"
echo "images: predictions by file"
sed "s|$work/||" "$work/preds.csv" | head -4
# the class is the image's folder: ROOT/CLASS/IMAGE
awk -F, 'NR > 1 { n = split($1, part, "/"); total++; right += (part[n - 1] == $2) }
         END { printf "images: validation accuracy %.3f (%d images)\n", right / total, total }' "$work/preds.csv"
