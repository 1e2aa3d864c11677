#!/bin/sh
# `nnvmc profile` on the CPU presets of Psiformer, PauliNet and Orbformer over LiH, CH4, C2H6,
# C4H4 (forward Laplacian, SPRING as in the presets, one thread each, WALKERS walkers), the
# companion of bench/profile_ferminet.sh (issue 15).
#   sh bench/profile_ansatze.sh [BUILD] [OUT]      (WALKERS, ITER, PROFILED, MOLECULES, ANSATZE)
set -eu
BUILD=${1:-build}
OUT=${2:-runs/bench_profile_ansatze}
WALKERS=${WALKERS:-64}
ITER=${ITER:-5}
PROFILED=${PROFILED:-3}
MOLECULES=${MOLECULES:-lih,ch4,c2h6,c4h4}
ANSATZE=${ANSATZE:-"psiformer paulinet orbformer"}
NNVMC=$BUILD/src/app/nnvmc
export OMP_NUM_THREADS=1
for a in $ANSATZE; do
  echo "== $a  $(uptime)"
  start=$(date +%s)
  $NNVMC profile "configs/runs/lih_$a.yaml" --molecules "$MOLECULES" --warmup 2 --iterations "$ITER" \
    --profile-iterations "$PROFILED" --output "$OUT/$a" sampler.walkers="$WALKERS" run.threads=1
  echo "== $a done in $(( $(date +%s) - start )) s"
done
uptime
