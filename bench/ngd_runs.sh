#!/bin/sh
# Natural-gradient figures (issue 6) on CPU: LiH SPRING vs Adam (same seed, model, sampler,
# pretraining and wall-clock budget, run side by side with one thread each), then He and H2
# with SPRING. Each training stops after its wall-clock budget (SIGINT: the trainer writes its
# checkpoint and stops; the budget includes HF pretraining), then the checkpoint is evaluated
# with fixed parameters. Usage: bench/ngd_runs.sh BUILD_DIR OUT_DIR
# Budgets and eval steps are environment variables (defaults: 60 min LiH, 20 min He/H2); the
# plot goes to PLOT (default OUT_DIR/ngd_lih_energy_vs_time.png; the committed figure:
# PLOT=bench/results/ngd_lih_energy_vs_time.png). Runs start afresh in OUT_DIR; a failed run or
# evaluation stops the script (bench/timed_runs.sh).
set -eu
BIN=${1:?build dir}/src/app/nnvmc
OUT=${2:?output dir}
LIH_S=${LIH_S:-3600} ATOM_S=${ATOM_S:-1200} LIH_EVAL=${LIH_EVAL:-2000} ATOM_EVAL=${ATOM_EVAL:-2000}
PLOT=${PLOT:-$OUT/ngd_lih_energy_vs_time.png}
COMMON="optim.iterations=100000 run.threads=1 run.checkpoint_every=50 eval.steps=0 optim.log_every=10"
. "$(dirname "$0")/timed_runs.sh"
mkdir -p "$OUT"
timed_pair lih_spring configs/runs/lih_ferminet_spring.yaml lih_adam configs/runs/lih_ferminet.yaml "$LIH_S"
timed_eval_pair lih_spring lih_adam "$LIH_EVAL"
timed_pair he_spring configs/runs/he_ferminet_spring.yaml h2_spring configs/runs/h2_ferminet_spring.yaml "$ATOM_S"
timed_eval_pair he_spring h2_spring "$ATOM_EVAL"
python3 "$(dirname "$0")/ngd_plot.py" "$PLOT" -8.070548 "Adam=$OUT/lih_adam" "SPRING=$OUT/lih_spring"
