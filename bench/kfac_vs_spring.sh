#!/bin/sh
# LiH: K-FAC (DeepQMC's/FermiNet's settings, configs/runs/lih_ferminet_kfac.yaml) against SPRING
# (configs/runs/lih_ferminet_spring.yaml), same model, seed, sampler and HF pretraining, run side
# by side with one thread each for the same wall-clock budget (SIGINT: the trainer checkpoints
# and stops; the budget includes pretraining), then each checkpoint evaluated with fixed
# parameters. Usage: bench/kfac_vs_spring.sh BUILD_DIR OUT_DIR  (env: SECONDS_EACH=300, EVAL=300,
# PLOT=OUT_DIR/kfac_vs_spring_lih.png; the committed figure: PLOT=bench/results/kfac_vs_spring_lih.png).
# Runs start afresh in OUT_DIR; a failed run or evaluation stops the script (bench/timed_runs.sh).
set -eu
BIN=${1:?build dir}/src/app/nnvmc
OUT=${2:?output dir}
S=${SECONDS_EACH:-300} EVAL=${EVAL:-300}
PLOT=${PLOT:-$OUT/kfac_vs_spring_lih.png}
COMMON="optim.iterations=100000 run.threads=1 run.checkpoint_every=50 eval.steps=0 optim.log_every=50"
. "$(dirname "$0")/timed_runs.sh"
mkdir -p "$OUT"
echo "# $(date -u +%Y-%m-%dT%H:%MZ), $S s each side by side, load at start $(cut -d' ' -f1-3 /proc/loadavg)"
timed_pair lih_kfac configs/runs/lih_ferminet_kfac.yaml lih_spring configs/runs/lih_ferminet_spring.yaml "$S"
echo "# load at end of training $(cut -d' ' -f1-3 /proc/loadavg)"
timed_eval_pair lih_kfac lih_spring "$EVAL"
for r in lih_kfac lih_spring; do echo "$r.eval.json: $(cat "$OUT/$r.eval.json")"; done
python3 "$(dirname "$0")/ngd_plot.py" "$PLOT" -8.070548 "K-FAC=$OUT/lih_kfac" "SPRING=$OUT/lih_spring"
for r in lih_kfac lih_spring; do echo "## time per stage, $r"; grep -A8 "time per stage" "$OUT/$r.log" | grep -v "^--" || true; done
