#!/usr/bin/env bash
# Strong scaling of a LiH training iteration (FermiNet of configs/runs/lih_ferminet_spring.yaml,
# SPRING, 512 walkers, float64, CPU): the same run with 1 and 2 MPI ranks, interleaved, REPS
# times each. Per run: median seconds per iteration (result.h5 train/seconds, first iteration
# dropped), the per-stage totals rank 0 logs, and the seconds rank 0 spent inside MPI collectives
# (communication + waiting for the other rank). One intra-op thread per rank.
# Usage: [CONFIG=run.yaml] bench/mpi_scaling.sh [BUILD_DIR] [ITERATIONS] [REPS] [WALKERS]
set -euo pipefail
BUILD=${1:-build}; ITERS=${2:-12}; REPS=${3:-3}; WALKERS=${4:-512}
CONFIG=${CONFIG:-configs/runs/lih_ferminet_spring.yaml}  # e.g. CONFIG=configs/runs/lih_ferminet_kfac.yaml
NNVMC=$BUILD/src/app/nnvmc
OUT=$(mktemp -d /tmp/nnvmc_mpi_scaling.XXXX)
export OMP_NUM_THREADS=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none ${MPI_EXTRA:-})
echo "# $(date -u +%FT%TZ)  $(uptime)  MPI_EXTRA=${MPI_EXTRA:-}"
echo "# nnvmc train $CONFIG optim.iterations=$ITERS sampler.walkers=$WALKERS pretrain.steps=0 sampler.burn_in=10 eval.steps=0 run.threads=1"
for rep in $(seq 1 "$REPS"); do
  for np in 1 2; do
    dir=$OUT/np${np}_rep$rep
    "${MPIRUN[@]}" -np "$np" "$NNVMC" train "$CONFIG" \
      optim.iterations="$ITERS" sampler.walkers="$WALKERS" pretrain.steps=0 sampler.burn_in=10 eval.steps=0 \
      run.threads=1 optim.log_every=1000 run.checkpoint_every=0 run.output="$dir" > "$dir.log" 2>&1
    python3 - "$dir" "$np" "$rep" <<'PY'
import re, sys, statistics, h5py
d, np_, rep = sys.argv[1:]
s = h5py.File(d + "/result.h5", "r")["train/seconds"][1:]
log = open(d + ".log").read()
stages = dict((m[0], float(m[1])) for m in re.findall(r"\s{2}(\w+)\s+([\d.]+) s\s+\(\d+ calls\)", log))
comm = re.search(r"MPI collectives on rank 0 \(incl\. waiting for other ranks\): ([\d.]+) s", log)
per = {k: v for k, v in stages.items()}
print(f"np={np_} rep={rep}  median s/iteration {statistics.median(s):.3f}  stages(s): " +
      " ".join(f"{k}={v:.2f}" for k, v in per.items()) +
      (f"  in_collectives={float(comm[1]):.2f}" if comm else "  in_collectives=0"))
PY
  done
done
echo "# $(uptime)"
rm -rf "$OUT"
