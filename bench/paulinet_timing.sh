#!/bin/sh
# Seconds per training iteration and per stage: PauliNet with the published network
# ("paulinet", configs/runs/lih_paulinet.yaml with embedding 128, kernel 64, 32 features), the
# CPU preset ("paulinet_cpu", configs/runs/lih_paulinet.yaml as it is) and FermiNet (the CPU
# preset of configs/runs/lih_ferminet_spring.yaml); same walkers, SPRING, forward Laplacian,
# one thread, on LiH and CH4. Runs are interleaved REPS times; each is ITERS iterations
# without burn-in, pretraining or evaluation. Prints every run's per-stage seconds/iteration.
# Usage: bench/paulinet_timing.sh BUILD_DIR OUT_DIR [WALKERS] [ITERS] [REPS]
set -eu
BIN=${1:?build dir}/src/app/nnvmc
OUT=${2:?output dir}
W=${3:-256} ITERS=${4:-3} REPS=${5:-2}
mkdir -p "$OUT"
common="run.threads=1 sampler.walkers=$W sampler.burn_in=0 optim.iterations=$ITERS eval.steps=0 pretrain.steps=0 run.checkpoint_every=0 optim.log_every=1"
for mol in lih ch4; do
  for rep in $(seq "$REPS"); do
    for model in paulinet paulinet_cpu ferminet; do
      cfg=configs/runs/lih_paulinet.yaml extra=""
      [ "$model" = paulinet ] && extra="model.paulinet.embedding_dim=128 model.paulinet.kernel_dim=64 model.paulinet.distance_features=32"
      [ "$model" = ferminet ] && cfg=configs/runs/lih_ferminet_spring.yaml
      dir="$OUT/${mol}_${model}_$rep"
      "$BIN" train "$cfg" system.molecule="$mol" run.output="$dir" $common $extra > "$dir.log" 2>&1
      python3 - "$dir.log" "$mol" "$model" "$ITERS" "$W" "$(uptime | sed 's/.*load average: //')" <<'PY'
import re, sys
log, mol, model, iters, w, load = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6]
t = {m.group(1): float(m.group(2)) / iters
     for m in re.finditer(r"info\s+(\w+)\s+([0-9.]+) s\s+\(\d+ calls\)", open(log).read())}
n = re.search(r"\((\d+) parameters\)", open(log).read()).group(1)
parts = "  ".join(f"{k} {v:6.2f}" for k, v in sorted(t.items()))
print(f"{mol:4s} {model:9s} {w:>4s} walkers {n:>7s} params  s/it {sum(t.values()):6.2f}  ({parts})  load {load}")
PY
    done
  done
done
