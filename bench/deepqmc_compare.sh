#!/bin/sh
# nnvmc against DeepQMC 1.2 on the same LiH FermiNet (21.4k parameters), 512 walkers, 10 MH steps
# per iteration, float64, one thread each, runs interleaved (round r runs every case once, in
# an order that alternates between rounds). Seconds per training iteration: wall-clock medians
# over the iterations after the first SKIP (JIT compilation, first-step calibration), and process
# CPU time per iteration (user + sys, all threads), which other load on this shared machine
# inflates much less than wall time: DeepQMC's from per-iteration process_time() stamps,
# nnvmc's from the difference of a SKIP- and an ITERS-iteration run (same start).
#   sh bench/deepqmc_compare.sh [BUILD_DIR] > bench/results/deepqmc_compare.txt
# Env: ITERS (default 40), SKIP (5), ROUNDS (2), CASES (all: see below), VENV (/work/venv-deepqmc),
# PIN (a core number: both programs run under taskset on that one core, so "one thread" is one
# core for each; without it XLA's helper threads give DeepQMC ~1.3 cores: cpu > wall).
# The venv is made on first use with the versions DeepQMC 1.2.0 runs with (newer pins crash it).
# Cases (program:optimizer:laplacian):
#   nnvmc:spring:forward nnvmc:kfac:forward dq:kfac:forward    natural gradient
#   nnvmc:adam:forward dq:adamw:forward                          Adam + forward Laplacian
#   nnvmc:kfac:jvp dq:kfac:loop                                  exact loop Laplacians
set -eu
BUILD=${1:-build}
NNVMC=$BUILD/src/app/nnvmc
ITERS=${ITERS:-40}
SKIP=${SKIP:-5}
ROUNDS=${ROUNDS:-2}
VENV=${VENV:-/work/venv-deepqmc}
CASES=${CASES:-"nnvmc:spring:forward nnvmc:kfac:forward dq:kfac:forward nnvmc:adam:forward dq:adamw:forward nnvmc:kfac:jvp dq:kfac:loop"}
TMP=${TMPDIR:-/tmp}/nnvmc_dq_compare
HERE=$(cd "$(dirname "$0")" && pwd)
PINCMD=${PIN:+taskset -c $PIN}

case " $CASES" in
  *" dq:"*)  # DeepQMC cases: its venv, made on first use; a venv without DeepQMC is an error, not a missing row
    if [ ! -x "$VENV/bin/python" ]; then
      python3 -m venv "$VENV"
      "$VENV/bin/pip" install -q "deepqmc==1.2.0" "hydra-core==1.3.2" "jax==0.4.31" "jaxlib==0.4.31" \
        "kfac-jax==0.0.6" "dm-haiku==0.0.12" "optax==0.2.3" "chex==0.1.86" "folx==0.2.11" >&2
    fi
    "$VENV/bin/python" -c "import deepqmc" 2> /dev/null ||
      { echo "VENV=$VENV: its python cannot import deepqmc (remove the venv to have it made again)" >&2; exit 1; } ;;
esac
PY=python3  # (h5py for nnvmc's series; the venv's python in DeepQMC runs)
[ -x "$VENV/bin/python" ] && PY=$VENV/bin/python
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
mkdir -p "$TMP"

# median seconds per iteration of an nnvmc run from result.h5 (train/seconds), after SKIP
nnvmc_median() {
  "$PY" - "$1" "$SKIP" <<'PY'
import sys, statistics, h5py
s = list(h5py.File(sys.argv[1], "r")["train/seconds"][:])[int(sys.argv[2]):]
print(f"{statistics.median(s):.4f} {len(s)}")
PY
}

run_case() {  # program:optimizer:laplacian round
  prog=${1%%:*}; rest=${1#*:}; opt=${rest%%:*}; lap=${rest#*:}
  if [ "$prog" = nnvmc ]; then
    cfg=configs/runs/lih_ferminet_spring.yaml
    [ "$opt" = kfac ] && cfg=configs/runs/lih_ferminet_kfac.yaml
    [ "$opt" = adam ] && cfg=configs/runs/lih_ferminet.yaml
    out=$TMP/$prog-$opt-$lap-$2
    # Process CPU time per iteration (robust to other load on the machine): a run of SKIP
    # iterations and one of ITERS, the same start; the difference is iterations SKIP+1..ITERS.
    cpu_of() {  # iterations → user+sys seconds of the whole run
      rm -rf "$out"
      /usr/bin/time -f "%U %S" -o "$out.time" $PINCMD "$NNVMC" train "$cfg" pretrain.steps=0 sampler.burn_in=0 \
        optim.iterations="$1" eval.steps=0 run.threads=1 hamiltonian.laplacian="$lap" run.output="$out" \
        run.checkpoint_every=0 > "$out.log" 2>&1
      awk '{print $1 + $2}' "$out.time"
    }
    c0=$(cpu_of "$SKIP")
    c1=$(cpu_of "$ITERS")
    cpu=$(awk -v a="$c0" -v b="$c1" -v n=$((ITERS - SKIP)) 'BEGIN{printf "%.4f", (b - a) / n}')
    set -- $(nnvmc_median "$out/result.h5")
    stages=$(grep -E " info   (sampling|local_energy|gradient|optimizer) " "$out.log" \
      | awk -v n="$ITERS" '{printf "%s=%.3f ", $3, $4 / n}')
    printf "%-6s %-7s %-8s %8s s/it wall %8s s/it cpu  (%s iterations timed; wall s/it per stage incl. first: %s)\n" \
      nnvmc "$opt" "$lap" "$1" "$cpu" "$2" "$stages"
  else
    log=$TMP/dq-$opt-$lap-$2.log
    $PINCMD "$VENV/bin/python" "$HERE/deepqmc_run.py" --opt "$opt" --laplacian "$lap" --steps "$ITERS" --skip "$SKIP" \
      > "$log.out" 2> "$log" || { echo "DeepQMC $opt/$lap failed, see $log:" >&2; tail -3 "$log" >&2; exit 1; }
    tail -2 "$log.out" | head -1
  fi
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ)  host $(hostname)  $(nproc --all) cores  load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# nnvmc $(git -C "$HERE/.." rev-parse --short HEAD 2>/dev/null || echo "(not a git checkout)"), deepqmc $("$VENV/bin/pip" show deepqmc 2>/dev/null | awk '/^Version/{print $2}'), ITERS=$ITERS SKIP=$SKIP ROUNDS=$ROUNDS, one thread, float64, 512 walkers${PIN:+, both pinned to core $PIN}"
r=1
while [ "$r" -le "$ROUNDS" ]; do
  list=$CASES
  [ $((r % 2)) -eq 0 ] && list=$(echo "$CASES" | tr ' ' '\n' | tac | tr '\n' ' ')
  echo "## round $r (load $(cut -d' ' -f1 /proc/loadavg))"
  for c in $list; do run_case "$c" "$r"; done
  r=$((r + 1))
done
echo "# load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
