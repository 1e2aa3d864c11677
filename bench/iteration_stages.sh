#!/bin/sh
# Seconds per training iteration and per stage for two nnvmc binaries (e.g. before/after a
# change), interleaved: LiH and CH4 with the LiH preset FermiNet, SPRING, forward Laplacian,
# one thread, no pretraining, no burn-in. Per-stage figures are wall time / iterations (the
# first iteration included); "cpu" is the process's user+sys time per iteration from the
# difference of a 2- and an (ITERS+2)-iteration run, which load from other processes inflates
# much less than wall time.
#   sh bench/iteration_stages.sh OLD_NNVMC NEW_NNVMC   (env: ITERS=10, ROUNDS=2, CASES)
set -eu
OLD=$1 NEW=$2
ITERS=${ITERS:-10} ROUNDS=${ROUNDS:-2}
CASES=${CASES:-"lih:512:spring ch4:256:spring"}
TMP=${TMPDIR:-/tmp}/nnvmc_iteration_stages
mkdir -p "$TMP"
export OMP_NUM_THREADS=1
run() {  # binary tag molecule walkers optimizer iterations
  out=$TMP/$2; rm -rf "$out"
  /usr/bin/time -f "%U %S" -o "$out.time" "$1" train configs/runs/lih_ferminet_spring.yaml system.molecule="$3" \
    sampler.walkers="$4" optim.type="$5" pretrain.steps=0 sampler.burn_in=0 optim.iterations="$6" eval.steps=0 \
    run.threads=1 run.checkpoint_every=0 run.output="$out" > "$out.log" 2>&1
  awk '{print $1 + $2}' "$out.time"
}
echo "# $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1-3 /proc/loadavg), ITERS=$ITERS"
r=1
while [ "$r" -le "$ROUNDS" ]; do
  for c in $CASES; do
    mol=${c%%:*}; rest=${c#*:}; w=${rest%%:*}; opt=${rest#*:}
    for which in old new; do
      bin=$OLD; [ "$which" = new ] && bin=$NEW
      c0=$(run "$bin" "$which-$mol-short" "$mol" "$w" "$opt" 2)
      c1=$(run "$bin" "$which-$mol" "$mol" "$w" "$opt" $((ITERS + 2)))
      stages=$(grep -E " info   (sampling|local_energy|gradient|optimizer) " "$TMP/$which-$mol.log" \
        | awk -v n=$((ITERS + 2)) '{printf "%s %.3f  ", $3, $4 / n}')
      awk -v a="$c0" -v b="$c1" -v n="$ITERS" -v tag="$which $mol $w $opt" -v s="$stages" \
        'BEGIN{printf "round %d  %-28s cpu %.3f s/it   wall per stage: %s\n", '"$r"', tag, (b - a) / n, s}'
    done
  done
  r=$((r + 1))
done
echo "# load at end $(cut -d' ' -f1-3 /proc/loadavg)"
