#!/bin/sh
# Natural-gradient figures (issue 6): LiH SPRING vs Adam, He and H2 with SPRING, on CPU.
# Each training stops after a wall-clock budget (SIGINT: the trainer checkpoints and stops),
# then the checkpoint is evaluated with fixed parameters. Usage: bench/ngd_runs.sh BUILD_DIR OUT_DIR
# Budgets and eval steps are environment variables (defaults: 60 min LiH, 20 min He/H2).
set -eu
BIN=${1:?build dir}/src/app/nnvmc
OUT=${2:?output dir}
LIH_S=${LIH_S:-3600} ATOM_S=${ATOM_S:-1200} LIH_EVAL=${LIH_EVAL:-2000} ATOM_EVAL=${ATOM_EVAL:-2000}
common="optim.iterations=100000 run.threads=1 run.checkpoint_every=50 eval.steps=0 optim.log_every=10"
train() {  # name config seconds
  timeout -s INT "$3" "$BIN" train "$2" run.output="$OUT/$1" $common > "$OUT/$1.log" 2>&1 || true
}
mkdir -p "$OUT"
train lih_spring configs/runs/lih_ferminet_spring.yaml "$LIH_S" &
train lih_adam configs/runs/lih_ferminet.yaml "$LIH_S" &
train he_spring configs/runs/he_ferminet_spring.yaml "$ATOM_S" &
train h2_spring configs/runs/h2_ferminet_spring.yaml "$ATOM_S" &
wait
for r in lih_spring lih_adam; do "$BIN" eval "$OUT/$r/checkpoint.h5" run.threads=1 --steps "$LIH_EVAL" --json > "$OUT/$r.eval.json"; done
for r in he_spring h2_spring; do "$BIN" eval "$OUT/$r/checkpoint.h5" run.threads=1 --steps "$ATOM_EVAL" --json > "$OUT/$r.eval.json"; done
python3 bench/ngd_plot.py bench/results/ngd_lih_energy_vs_time.png -8.070548 \
  "Adam=$OUT/lih_adam" "SPRING=$OUT/lih_spring"
