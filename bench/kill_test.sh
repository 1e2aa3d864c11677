#!/usr/bin/env bash
# Kill test (issue 18): a short training run is killed with SIGKILL at random moments KILLS times
# (default 10) and resumed after each kill; at the end its parameters, optimizer and sampler
# state must equal an uninterrupted run's bit for bit, and no checkpoint may ever have been
# unreadable (each one is loaded, checksum included, by `nnvmc eval` after every kill).
# Killed before its first checkpoint, the run is started again with --force.
# usage: bench/kill_test.sh [BUILD_DIR] [KILLS]      (needs python3 with h5py for the comparison)
set -euo pipefail
BUILD=${1:-build}
KILLS=${2:-10}
BIN="$BUILD/src/app/nnvmc"
OUT=$(mktemp -d /tmp/nnvmc_kill.XXXXXX)
ITER=${ITER:-300}
cat > "$OUT/run.yaml" <<YAML
system: {molecule: he}
model: {ferminet: {hidden_dims: [[16, 4], [16, 4]], determinants: 2}}
sampler: {walkers: 32, steps_per_iteration: 5, burn_in: 20}
optim: {type: spring, iterations: $ITER, log_every: 1000}
pretrain: {steps: 5}
eval: {steps: 0}
run: {seed: 7, threads: 1, checkpoint_every: 1}
YAML
log() { echo "[kill_test] $*"; }
check_checkpoint() {  # $1 = checkpoint: must load (format, version, checksum) whenever it exists
  [ -f "$1" ] || return 0
  if ! "$BIN" eval "$1" --steps 1 eval.burn_in=0 --json --log-level error > /dev/null 2> "$OUT/check.err"; then
    log "UNREADABLE checkpoint $1: $(cat "$OUT/check.err")"; exit 1
  fi
}
ms() { echo $(( $(date +%s%N) / 1000000 )); }
start=$(ms)
log "reference: uninterrupted run of $ITER iterations (checkpoint after every iteration)"
"$BIN" train "$OUT/run.yaml" run.output="$OUT/ref" --log-level warn > "$OUT/ref.log" 2>&1
ref_ms=$(( $(ms) - start ))
log "reference took ${ref_ms} ms"
RANDOM=${SEED:-42}
kills=0 restarts=0 resumes=0
iteration_of() {  # $1 = checkpoint; prints its iteration (0 when there is none)
  python3 -c "import h5py,sys; print(int(h5py.File(sys.argv[1],'r')['iteration'][()]))" "$1" 2>/dev/null || echo 0
}
while [ "$kills" -lt "$KILLS" ]; do
  done_it=$(iteration_of "$OUT/killed/checkpoint.h5")
  if [ -f "$OUT/killed/checkpoint.h5" ]; then
    "$BIN" train --resume "$OUT/killed" --log-level warn >> "$OUT/killed.log" 2>&1 & resumes=$((resumes + 1))
  else
    "$BIN" train "$OUT/run.yaml" run.output="$OUT/killed" --force --log-level warn >> "$OUT/killed.log" 2>&1 &
    restarts=$((restarts + 1))
  fi
  pid=$!
  [ "$done_it" -lt "$ITER" ] || { log "the run is complete after $kills kills"; break; }
  # A random moment between 0.1 s and twice the reference's time per kill, so that the kills are
  # spread over the whole run (start-up, pretraining, burn-in, iterations, checkpoint writes).
  delay_ms=$(( 100 + (RANDOM * 32768 + RANDOM) % (2 * ref_ms / KILLS) ))
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  if kill -9 "$pid" 2> /dev/null; then
    wait "$pid" 2> /dev/null || true
    kills=$((kills + 1))
    log "kill $kills after ${delay_ms} ms (checkpoint iteration before: $done_it, after: $(iteration_of "$OUT/killed/checkpoint.h5"))"
    check_checkpoint "$OUT/killed/checkpoint.h5"
  else
    wait "$pid" || { log "run failed: $(tail -3 "$OUT/killed.log")"; exit 1; }
    log "the run finished before the kill (${delay_ms} ms)"
    break
  fi
done
if [ "$(iteration_of "$OUT/killed/checkpoint.h5")" -ne "$ITER" ]; then
  log "finishing the run"
  if [ -f "$OUT/killed/checkpoint.h5" ]; then "$BIN" train --resume "$OUT/killed" --log-level warn >> "$OUT/killed.log" 2>&1
  else "$BIN" train "$OUT/run.yaml" run.output="$OUT/killed" --force --log-level warn >> "$OUT/killed.log" 2>&1; fi
fi
check_checkpoint "$OUT/killed/checkpoint.h5"
python3 - "$OUT/ref" "$OUT/killed" <<'PY'
import sys, h5py, numpy as np
ref, got = (h5py.File(d + "/checkpoint.h5", "r") for d in sys.argv[1:3])
# trained_seconds is wall time (for optim.minutes), not state: it differs between any two runs
WALL_CLOCK = {"trained_seconds"}
names = []
ref.visit(lambda n: names.append(n) if isinstance(ref[n], h5py.Dataset) and n not in WALL_CLOCK else None)
bad = [n for n in names if n not in got or ref[n].shape != got[n].shape or
       ref[n][()].tobytes() != got[n][()].tobytes()]
print(f"[kill_test] compared {len(names)} datasets (parameters, optimizer, sampler incl. RNG; not the wall "
      f"clock, {', '.join(sorted(WALL_CLOCK))}): "
      f"{'all bit-identical' if not bad else 'DIFFERENT: ' + ', '.join(bad)}")
r, g = (h5py.File(d + "/result.h5", "r") for d in sys.argv[1:3])
same = [k for k in ("train/energy", "train/variance", "train/step_size", "pretrain/final_loss")
        if np.array_equal(r[k][()], g[k][()])]
print(f"[kill_test] result.h5 series identical: {', '.join(same)}; rows {len(r['train/energy'])} vs {len(g['train/energy'])}")
sys.exit(1 if bad or len(same) < 4 else 0)
PY
log "kills $kills, fresh (re)starts $restarts, resumes $resumes, total $(( ($(ms) - start) / 1000 )) s; output in $OUT"
