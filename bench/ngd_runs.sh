#!/bin/sh
# Natural-gradient figures (issue 6) on CPU: LiH SPRING vs Adam (same seed, model, sampler,
# pretraining and wall-clock budget, run side by side with one thread each), then He and H2
# with SPRING. Each training stops after its wall-clock budget (SIGINT: the trainer writes its
# checkpoint and stops; the budget includes HF pretraining), then the checkpoint is evaluated
# with fixed parameters. Usage: bench/ngd_runs.sh BUILD_DIR OUT_DIR
# Budgets and eval steps are environment variables (defaults: 60 min LiH, 20 min He/H2).
set -eu
BIN=${1:?build dir}/src/app/nnvmc
OUT=${2:?output dir}
LIH_S=${LIH_S:-3600} ATOM_S=${ATOM_S:-1200} LIH_EVAL=${LIH_EVAL:-2000} ATOM_EVAL=${ATOM_EVAL:-2000}
common="optim.iterations=100000 run.threads=1 run.checkpoint_every=50 eval.steps=0 optim.log_every=10"
train() {  # name config seconds
  timeout -s INT "$3" "$BIN" train "$2" run.output="$OUT/$1" --force $common > "$OUT/$1.log" 2>&1 || true
}
evaluate() {  # name steps
  "$BIN" eval "$OUT/$1/checkpoint.h5" run.threads=1 --steps "$2" --json > "$OUT/$1.eval.json"
}
mkdir -p "$OUT"
train lih_spring configs/runs/lih_ferminet_spring.yaml "$LIH_S" &
train lih_adam configs/runs/lih_ferminet.yaml "$LIH_S" &
wait
evaluate lih_spring "$LIH_EVAL" & evaluate lih_adam "$LIH_EVAL" &
wait
train he_spring configs/runs/he_ferminet_spring.yaml "$ATOM_S" &
train h2_spring configs/runs/h2_ferminet_spring.yaml "$ATOM_S" &
wait
evaluate he_spring "$ATOM_EVAL" & evaluate h2_spring "$ATOM_EVAL" &
wait
python3 bench/ngd_plot.py bench/results/ngd_lih_energy_vs_time.png -8.070548 \
  "Adam=$OUT/lih_adam" "SPRING=$OUT/lih_spring"
