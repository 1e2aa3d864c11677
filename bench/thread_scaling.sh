#!/bin/sh
# Per-stage thread scaling of a LiH FermiNet training iteration (SPRING unless CONFIG) (issue 16): one thread,
# THREADS intra-op threads alone (run.walker_threads=false), and THREADS threads with walker
# parts (the default), interleaved, ROUNDS rounds; stage totals in s over 12 iterations
# (including 10 burn-in MH steps).
# usage: sh bench/thread_scaling.sh [BUILD_DIR] [WALKERS] [ROUNDS] [THREADS] [CONFIG]
B=${1:-build}; W=${2:-512}; R=${3:-3}; T=${4:-$(nproc)}; CFG=${5:-configs/runs/lih_ferminet_spring.yaml}
OUT=$(mktemp -d)
C="$B/src/app/nnvmc train $CFG optim.iterations=12 sampler.walkers=$W \
pretrain.steps=0 sampler.burn_in=10 eval.steps=0 optim.log_every=1000 run.checkpoint_every=0 run.overwrite=true \
run.output=$OUT/run"
for i in $(seq "$R"); do
  for mode in "1 false" "$T false" "$T true"; do
    set -- $mode
    s=$(date +%s.%N)
    line=$($C run.threads="$1" run.walker_threads="$2" 2>&1 |
      grep -E "info   (gradient|local_energy |optimizer|sampling)" | awk '{printf "%s=%s ", $3, $4}')
    e=$(date +%s.%N)
    echo "walkers=$W threads=$1 walker_threads=$2 round=$i wall=$(echo "$e - $s" | bc | cut -c1-5) $line"
  done
done
rm -rf "$OUT"
