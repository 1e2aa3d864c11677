#!/usr/bin/env bash
# How often the evaluation's stationarity check (src/train/evaluate.hpp, kDriftThreshold) flags
# an evaluation whose walkers ARE in equilibrium: H2's Hartree-Fock state (model hf, no training),
# walkers burnt in for 2000 steps, then N independent evaluations (--seed 1..N) of STEPS steps.
# Prints each drift_z and the share above the threshold. Usage:
#   bash bench/drift_check_false_alarms.sh [N=200] [STEPS=25] [WALKERS=64]
set -euo pipefail
N=${1:-200}; STEPS=${2:-25}; WALKERS=${3:-64}
EXE=${NNVMC:-$(dirname "$0")/../build/src/app/nnvmc}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cat > "$dir/h2.yaml" <<YAML
system: {molecule: h2}
model: {type: hf}
sampler: {walkers: $WALKERS, burn_in: 2000}
optim: {iterations: 0}
pretrain: {steps: 0}
eval: {steps: 2}
run: {threads: 1, output: $dir/run}
YAML
OMP_NUM_THREADS=1 "$EXE" train "$dir/h2.yaml" --log-level error >/dev/null
for s in $(seq 1 "$N"); do
  OMP_NUM_THREADS=1 "$EXE" eval "$dir/run" --steps "$STEPS" eval.burn_in=0 --seed "$s" --json --log-level error
done | python3 -c '
import json, sys
text = sys.stdin.read()
dec, i, z = json.JSONDecoder(), 0, []
while True:
    i = text.find("{", i)
    if i < 0: break
    j, i = dec.raw_decode(text, i)
    z.append(j["drift_z"])
big = [v for v in z if abs(v) > 3.5]
print("evaluations %d  |z|>3.5: %d (%.2f %%)  |z|>3: %d  mean z %.3f  sd z %.3f" % (len(z), len(big), 100.0 * len(big) / len(z),
      sum(abs(v) > 3 for v in z), sum(z) / len(z), (sum(v * v for v in z) / len(z) - (sum(z) / len(z)) ** 2) ** 0.5))
'
