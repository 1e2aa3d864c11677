#!/usr/bin/env bash
# How often the evaluation's stationarity check (src/train/evaluate.hpp, kDriftThreshold) flags
# an evaluation whose walkers ARE in equilibrium: H2's Hartree-Fock state (model hf, no training),
# walkers burnt in for 2000 steps, then N evaluations (--seed 1..N) of STEPS steps of SPI MH
# steps each, every one after its own 200-step burn-in (so that they do not share a start).
# Prints the share of drift_z above the threshold, and how many evaluations were checked (with
# fewer than 16 walkers, only those whose reblocking found a plateau); and the same for the
# mixing check (walkers_apart: the walkers' spread error over the reblocking error above
# kMaxWalkerSpreadRatio = 3, checked with 16 walkers or more and a reblocking plateau). Usage:
#   bash bench/drift_check_false_alarms.sh [N=200] [STEPS=25] [WALKERS=64] [SPI=10]
set -euo pipefail
N=${1:-200}; STEPS=${2:-25}; WALKERS=${3:-64}; SPI=${4:-10}
EXE=${NNVMC:-$(dirname "$0")/../build/src/app/nnvmc}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cat > "$dir/h2.yaml" <<YAML
system: {molecule: h2}
model: {type: hf}
sampler: {walkers: $WALKERS, burn_in: 2000, steps_per_iteration: $SPI}
optim: {iterations: 0}
pretrain: {steps: 0}
eval: {steps: 2}
run: {threads: 1, output: $dir/run}
YAML
OMP_NUM_THREADS=1 "$EXE" train "$dir/h2.yaml" --log-level error >/dev/null
for s in $(seq 1 "$N"); do
  OMP_NUM_THREADS=1 "$EXE" eval "$dir/run" --steps "$STEPS" eval.burn_in=200 --seed "$s" --json --log-level error
done | python3 -c '
import json, sys
text = sys.stdin.read()
dec, i, n, z, ratio, apart = json.JSONDecoder(), 0, 0, [], [], 0
while True:
    i = text.find("{", i)
    if i < 0: break
    j, i = dec.raw_decode(text, i)
    n += 1
    if j["drift_z"] is not None: z.append(j["drift_z"])
    if j["walkers"] >= 16 and j["error_plateau"] and j["energy_err_walkers"] and j["energy_err_reblocking"]:
        ratio.append(j["energy_err_walkers"] / j["energy_err_reblocking"])
    apart += bool(j.get("walkers_apart"))
big = [v for v in z if abs(v) > 3.5]
print("evaluations %d, checked %d  |z|>3.5: %d (%.2f %%)  |z|>3: %d  mean z %.3f  sd z %.3f" % (n, len(z), len(big), 100.0 * len(big) / max(1, len(z)),
      sum(abs(v) > 3 for v in z), sum(z) / max(1, len(z)), (sum(v * v for v in z) / max(1, len(z)) - (sum(z) / max(1, len(z))) ** 2) ** 0.5))
ratio.sort()
if ratio:
    print("mixing check: checked %d  walkers_apart: %d  spread/reblocking ratio median %.2f, max %.2f" % (len(ratio), apart, ratio[len(ratio) // 2], ratio[-1]))
'
