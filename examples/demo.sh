#!/usr/bin/env bash
# The main job: train two models from bash (examples/regression.sh, examples/classifier.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bash "$here/regression.sh"
echo
bash "$here/classifier.sh"
