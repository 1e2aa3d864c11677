#!/bin/sh
# Orbformer figures (issue 14 part A): parameter counts (published default, CPU preset) and
# seconds per training iteration on LiH, Orbformer preset (configs/runs/lih_orbformer.yaml) vs
# FermiNet preset (configs/runs/lih_ferminet_spring.yaml): same optimizer (SPRING), sampler,
# walkers and Laplacian method; one thread each, run one after the other and interleaved over
# ROUNDS rounds. Usage: bench/orbformer_speed.sh BUILD_DIR OUT_DIR
# Environment: ROUNDS (3), ITERS (8 per run), WALKERS (512), LAPLACIAN (forward).
set -eu
BIN=${1:?build dir}/src/app/nnvmc
OUT=${2:?output dir}
ROUNDS=${ROUNDS:-3} ITERS=${ITERS:-8} WALKERS=${WALKERS:-512} LAPLACIAN=${LAPLACIAN:-forward}
common="optim.iterations=$ITERS sampler.walkers=$WALKERS hamiltonian.laplacian=$LAPLACIAN pretrain.steps=0
  eval.steps=0 run.threads=1 run.checkpoint_every=0 optim.log_every=1000 sampler.burn_in=50"
mkdir -p "$OUT"
export OMP_NUM_THREADS=1
# Parameter count of the published default (model.orbformer defaults) and of the preset.
"$BIN" train configs/runs/lih_orbformer.yaml run.output="$OUT/default" optim.iterations=0 eval.steps=0 \
  pretrain.steps=0 sampler.burn_in=0 sampler.walkers=8 run.threads=1 \
  "model.orbformer={}" 2>&1 | grep "orbformer:" | head -1 > "$OUT/params_default.txt"
for r in $(seq 1 "$ROUNDS"); do
  for m in ferminet_spring orbformer; do
    "$BIN" train "configs/runs/lih_$m.yaml" run.output="$OUT/${m}_$r" $common > "$OUT/${m}_$r.log" 2>&1
  done
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import sys, re, statistics, h5py
out, rounds = sys.argv[1], int(sys.argv[2])
def params(log):
    m = re.search(r"model (\w+) \((\d+) parameters\)", open(log).read())
    return m.group(1), int(m.group(2))
res = {}
for m in ["ferminet_spring", "orbformer"]:
    secs, stages = [], {}
    for r in range(1, rounds + 1):
        secs += list(h5py.File(f"{out}/{m}_{r}/result.h5")["train/seconds"][1:])  # first iteration warms up
        for line in open(f"{out}/{m}_{r}.log"):
            s = re.search(r"info\s+(\w+)\s+([\d.]+) s\s+\((\d+) calls\)", line)
            if s and s.group(1) in ("local_energy", "gradient", "optimizer", "sampling"):
                stages.setdefault(s.group(1), []).append(float(s.group(2)) / int(s.group(3)))
    res[m] = (params(f"{out}/{m}_1.log"), statistics.median(secs), len(secs),
              {k: statistics.median(v) for k, v in stages.items()})
print(open(f"{out}/params_default.txt").read().strip())
for m, ((name, p), med, n, st) in res.items():
    print(f"{m:16s} {name:9s} {p:8d} parameters  {med:.3f} s/iteration (median of {n})  per call: " +
          "  ".join(f"{k} {v:.3f} s" for k, v in sorted(st.items())))
print(f"orbformer / ferminet seconds per iteration: {res['orbformer'][1] / res['ferminet_spring'][1]:.2f}")
PY
