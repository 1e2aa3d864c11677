#!/usr/bin/env bash
# The quick-start demo: train a small FermiNet on He (under a minute), then evaluate it.
# usage: examples/demo.sh [BUILD_DIR]
set -euo pipefail
BUILD=${1:-build}
NNVMC="$BUILD/src/app/nnvmc"
OUT=runs/demo_he
echo "== nnvmc demo: FermiNet on He (exact energy -2.903724 Eh) =="
"$NNVMC" train configs/runs/he_ferminet_small.yaml run.output=$OUT --force optim.iterations=400 \
  optim.log_every=50 eval.steps=200
echo
echo "== evaluation of the trained checkpoint =="
"$NNVMC" eval $OUT/checkpoint.h5 --steps 200
echo
echo "results: $OUT/ (config.yaml, result.h5, checkpoint.h5, summary.json)"
