#!/usr/bin/env bash
# The main job: train models from bash: step by step (examples/regression.sh, examples/classifier.sh),
# then from a data file with `torch fit`, interrupted and resumed (examples/fit.sh), and from a CSV of
# named classes to predictions joined back to their rows (examples/predict.sh), and an image folder's
# predictions named by file (examples/images.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bash "$here/regression.sh"
echo
bash "$here/classifier.sh"
echo
bash "$here/fit.sh"
echo
bash "$here/predict.sh"
echo
bash "$here/images.sh"
