#!/bin/sh
# Seconds per training iteration by stage (sampling, local_energy, gradient, optimizer) for
# the Psiformer and FermiNet CPU presets (configs/runs/lih_psiformer.yaml,
# lih_ferminet_spring.yaml: SPRING, forward Laplacian) on LiH and CH4 at the same walkers.
# Each (molecule, model) is trained twice from the same seed, for I0 and I0 + ITERS iterations
# (no pretraining, no burn-in, one evaluation step so summary.json is written); the difference
# of the per-stage seconds divided by ITERS is the time of ITERS steady-state iterations, free
# of start-up, chunk calibration and evaluation. Models alternate within each molecule, one
# thread each, one run at a time.
# usage: sh bench/psiformer_stages.sh BUILD_DIR OUT_DIR [WALKERS] [ITERS] [I0] [MOLECULES]
set -eu
BIN=${1:?build dir}/src/app/nnvmc
OUT=${2:?output dir}
WALKERS=${3:-512} ITERS=${4:-10} I0=${5:-2} MOLECULES=${6:-"lih ch4"}
common="pretrain.steps=0 sampler.burn_in=0 eval.steps=1 eval.burn_in=0 run.threads=1 run.checkpoint_every=0 \
optim.log_every=1000 sampler.walkers=$WALKERS"
mkdir -p "$OUT"
for mol in $MOLECULES; do
  for model in ferminet:configs/runs/lih_ferminet_spring.yaml psiformer:configs/runs/lih_psiformer.yaml; do
    name=${model%%:*} config=${model#*:}
    for n in "$I0" $((I0 + ITERS)); do
      "$BIN" train "$config" system.molecule="$mol" optim.iterations="$n" run.output="$OUT/${mol}_${name}_$n" \
        $common > "$OUT/${mol}_${name}_$n.log" 2>&1
    done
  done
done
python3 - "$OUT" "$I0" "$ITERS" "$MOLECULES" <<'EOF'
import json, re, sys
out, i0, iters, molecules = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split()
stages = ["sampling", "local_energy", "gradient", "optimizer"]
print(f"# seconds per iteration (difference of {i0 + iters}- and {i0}-iteration runs / {iters})")
print(f"{'mol':5} {'model':10} {'params':>8} " + " ".join(f"{s:>12}" for s in stages) + f" {'total':>8}")
for mol in molecules:
    for model in ["ferminet", "psiformer"]:
        t = [json.load(open(f"{out}/{mol}_{model}_{n}/summary.json"))["timings"] for n in (i0, i0 + iters)]
        per = [(t[1].get(s, {}).get("seconds", 0) - t[0].get(s, {}).get("seconds", 0)) / iters for s in stages]
        log = open(f"{out}/{mol}_{model}_{i0}.log").read()
        m = re.search(r"(\d+) parameters", log)
        print(f"{mol:5} {model:10} {m.group(1) if m else '?':>8} " + " ".join(f"{x:12.4f}" for x in per) +
              f" {sum(per):8.3f}")
EOF
