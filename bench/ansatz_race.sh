#!/bin/sh
# Ansätze side by side under one wall-clock budget (issues 12 and 13): every config trains at
# the same time with one thread each; the checkpoint of each run is copied at the time marks
# (seconds since its start, HF pretraining included), the run is stopped with SIGINT at the last
# mark (the trainer checkpoints and stops), and every snapshot is then evaluated with fixed
# parameters. The energy "at 0 minutes" is the run's starting point: its pretrained (or, without
# pretraining, freshly initialised) parameters.
#
# usage: bench/ansatz_race.sh BUILD_DIR OUT_DIR NAME=CONFIG [NAME=CONFIG ...]
# environment: MARKS (seconds, default "120 300 600 1800"), EVAL_STEPS (default 1000),
#              EXTRA (overrides for every run, e.g. "sampler.walkers=256"), E_REF (for the table)
# output: OUT_DIR/<name>/... runs, OUT_DIR/<name>.<mark>.eval.json, OUT_DIR/race.tsv
set -eu
BIN=${1:?build dir}/src/app/nnvmc
OUT=${2:?output dir}
shift 2
MARKS=${MARKS:-"120 300 600 1800"}
EVAL_STEPS=${EVAL_STEPS:-1000}
EXTRA=${EXTRA:-}
E_REF=${E_REF:--8.070548}
LAST=0
for m in $MARKS; do LAST=$m; done
mkdir -p "$OUT"
common="optim.iterations=1000000 run.threads=1 run.checkpoint_every=5 eval.steps=0 optim.log_every=10"

race_one() {  # name config
  name=$1 cfg=$2 dir="$OUT/$1"
  # starting point: the same run with zero iterations (pretraining only)
  "$BIN" train "$cfg" run.output="$OUT/$name.start" optim.iterations=0 eval.steps=0 run.threads=1 $EXTRA \
    > "$OUT/$name.start.log" 2>&1
  "$BIN" train "$cfg" run.output="$dir" $common $EXTRA > "$OUT/$name.log" 2>&1 &
  pid=$!
  start=$(date +%s)
  for m in $MARKS; do
    while [ $(( $(date +%s) - start )) -lt "$m" ]; do sleep 1; done
    if [ "$m" = "$LAST" ]; then
      kill -INT "$pid" 2>/dev/null || true
      wait "$pid" || true
    fi
    [ -f "$dir/checkpoint.h5" ] && cp "$dir/checkpoint.h5" "$OUT/$name.$m.h5"
  done
}

for spec in "$@"; do
  race_one "${spec%%=*}" "${spec#*=}" &
done
wait
echo "uptime after the race: $(uptime)" > "$OUT/race.tsv"
printf "ansatz\tseconds\titerations\tenergy\terror\tgap_mEh\n" >> "$OUT/race.tsv"
for spec in "$@"; do
  name=${spec%%=*}
  for m in 0 $MARKS; do
    ckpt="$OUT/$name.$m.h5"
    [ "$m" = 0 ] && ckpt="$OUT/$name.start/checkpoint.h5"
    [ -f "$ckpt" ] || continue
    "$BIN" eval "$ckpt" run.threads=2 --steps "$EVAL_STEPS" --json > "$OUT/$name.$m.eval.json"
    python3 - "$name" "$m" "$OUT/$name.$m.eval.json" "$ckpt" "$E_REF" >> "$OUT/race.tsv" <<'EOF'
import json, sys, h5py
name, mark, path, ckpt, eref = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])
j = json.load(open(path))
with h5py.File(ckpt, "r") as f:
    it = int(f["iteration"][()])
print(f"{name}\t{mark}\t{it}\t{j['energy']:.6f}\t{j['energy_err']:.6f}\t{1000 * (j['energy'] - eref):.2f}")
EOF
  done
done
cat "$OUT/race.tsv"
