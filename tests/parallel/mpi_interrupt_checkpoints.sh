#!/usr/bin/env bash
# Two ranks of a run with a large checkpoint (6.6 M parameters, ~160 MB) are sent SIGINT, as a
# terminal's Ctrl-C does: the run stops with exit code 1 and its checkpoint complete (no
# checkpoint.h5.tmp left), and it resumes. (A user audit: the other ranks stopped the job while
# rank 0 was still writing, 4 times of 4, and left only checkpoint.h5.tmp.)
# Usage: mpi_interrupt_checkpoints.sh NNVMC <mpirun> <flags...>
set -eu
nnvmc=$1; shift
dir=$(mktemp -d)
trap 'pkill -KILL -f "$dir/" 2>/dev/null || true; rm -rf "$dir"' EXIT
cat > "$dir/run.yaml" <<YAML
system: {molecule: he}
model: {ferminet: {hidden_dims: [[1024, 64], [1024, 64], [1024, 64]], determinants: 1}}
sampler: {walkers: 4, steps_per_iteration: 1, burn_in: 1}
optim: {iterations: 100000, log_every: 1}
pretrain: {steps: 0}
eval: {steps: 2, burn_in: 1}
run: {threads: 1, checkpoint_every: 0, output: $dir/out}
YAML
# wait_for_iteration LOG IT WHAT: until LOG shows iteration IT (two minutes at most)
wait_for_iteration() {
  for _ in $(seq 1 600); do grep -q "it  *$2/" "$1" && break; sleep 0.2; done
  grep -q "it  *$2/" "$1" || { cat "$1"; echo "FAIL: $3"; exit 1; }
}
# expect_exit_1 LOG WHAT: the background job $job ends with exit code 1 (its LOG printed)
expect_exit_1() {
  set +e
  wait $job
  local rc=$?
  set -e
  cat "$1"
  [ "$rc" = 1 ] || { echo "FAIL: $2exit code $rc, expected 1"; exit 1; }
}
"$@" -np 2 "$nnvmc" train "$dir/run.yaml" > "$dir/log" 2>&1 &
job=$!
wait_for_iteration "$dir/log" 2 "training did not start"
# the ranks (their command lines start with nnvmc; mpirun's, which holds the same text, does not:
# mpirun kills the ranks one second after it forwards a signal)
pkill -INT -f "^$nnvmc train $dir/run.yaml" || true
expect_exit_1 "$dir/log" ""
# the hint runs the resume as this run ran (it had no mpirun: a user audit)
grep -q "resume with: mpirun -np 2 nnvmc train --resume $dir/out" "$dir/log" || { echo "FAIL: resume hint without mpirun"; exit 1; }
[ -f "$dir/out/checkpoint.h5" ] || { ls -la "$dir/out"; echo "FAIL: no checkpoint"; exit 1; }
[ ! -e "$dir/out/checkpoint.h5.tmp" ] || { ls -la "$dir/out"; echo "FAIL: a half-written checkpoint.h5.tmp"; exit 1; }
n=$(grep -o "writing checkpoint at iteration [0-9]*" "$dir/log" | grep -o "[0-9]*$")
"$@" -np 1 "$nnvmc" train --resume "$dir/out" optim.iterations=$((n + 1)) eval.steps=0 > "$dir/log2" 2>&1 ||
  { cat "$dir/log2"; echo "FAIL: resume"; exit 1; }
# A file STOP in the run directory stops both ranks the same way, without a signal (mpirun's own
# Ctrl-C kills large ranks before their checkpoint; a user audit): exit 1, checkpoint, file removed.
timeout 300 "$@" -np 2 "$nnvmc" train --resume "$dir/out" optim.iterations=100000 eval.steps=0 > "$dir/log3" 2>&1 &
job=$!
wait_for_iteration "$dir/log3" $((n + 3)) "the resume did not train"
touch "$dir/out/STOP"
expect_exit_1 "$dir/log3" "STOP: "
grep -q "STOP asks the run to stop" "$dir/log3" || { echo "FAIL: STOP not named"; exit 1; }
[ ! -e "$dir/out/STOP" ] || { echo "FAIL: STOP left in place"; exit 1; }
[ ! -e "$dir/out/checkpoint.h5.tmp" ] || { ls -la "$dir/out"; echo "FAIL: a half-written checkpoint.h5.tmp"; exit 1; }
m=$(grep -o "writing checkpoint at iteration [0-9]*" "$dir/log3" | grep -o "[0-9]*$")
[ "$m" -gt "$((n + 2))" ] || { echo "FAIL: STOP checkpoint at iteration $m"; exit 1; }
echo ok
