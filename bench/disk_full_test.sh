#!/usr/bin/env bash
# Full-disk test: a run with a good checkpoint is resumed on a filesystem with FREE KiB left (a
# tmpfs of 700 KiB filled up), for each FREE in the list. The resume must stop with exit code 1
# and "No space left on device", and the checkpoint must still be the good one (it used to be
# replaced by a corrupt file, after which the process segfaulted in HDF5's exit handler).
# Then a fresh run into a 120 KiB tmpfs must fail the same way. Needs root (mount) and h5py.
# usage: sudo bench/disk_full_test.sh [BUILD] ["8 16 24 38"]
set -u
BUILD=${1:-build}; FREES=${2:-"8 16 24 38"}
BIN=$(cd "$BUILD" && pwd)/src/app/nnvmc
W=$(mktemp -d /tmp/nnvmc_diskfull.XXXXXX); cd "$W"; mkdir tiny
cat > he.yaml <<'YAML'
system: {molecule: he}
model: {ferminet: {hidden_dims: [[8, 4], [8, 4]], determinants: 2}}
sampler: {walkers: 16, steps_per_iteration: 2, burn_in: 5, step_size: 0.3}
optim: {iterations: 5, log_every: 1000}
eval: {steps: 5, burn_in: 2}
pretrain: {steps: 2}
run: {seed: 11, checkpoint_every: 2, threads: 1}
YAML
mount -t tmpfs -o size=700k tmpfs tiny || { echo "cannot mount a tmpfs (root needed)"; exit 2; }
trap 'umount "$W/tiny" 2>/dev/null; umount "$W/small" 2>/dev/null; rm -rf "$W"' EXIT
OMP_NUM_THREADS=1 "$BIN" train he.yaml run.output="$W/tiny/g" run.checkpoint_every=0 > first.log 2>&1 || { echo "first run failed"; exit 1; }
good=$(md5sum < tiny/g/checkpoint.h5); fails=0
for free in $FREES; do
  cp -r tiny/g g.bak
  avail=$(df -k --output=avail tiny | tail -1)
  dd if=/dev/zero of=tiny/filler bs=1k count=$((avail - free)) 2> /dev/null
  OMP_NUM_THREADS=1 "$BIN" train --resume tiny/g optim.iterations=6 run.checkpoint_every=0 > resume.log 2>&1; rc=$?
  now=$(md5sum < tiny/g/checkpoint.h5)
  verdict=ok; { [ $rc -eq 1 ] && grep -q "No space left on device" resume.log && [ "$now" = "$good" ]; } || { verdict=FAIL; fails=1; }
  echo "free ${free} KiB: exit $rc, checkpoint $([ "$now" = "$good" ] && echo unchanged || echo CHANGED): $(tail -1 resume.log | cut -c1-120)  [$verdict]"
  rm -f tiny/filler; rm -rf tiny/g; mv g.bak tiny/g
done
mkdir small; mount -t tmpfs -o size=120k tmpfs small
OMP_NUM_THREADS=1 "$BIN" train he.yaml run.output="$W/small/g" > fresh.log 2>&1; rc=$?
echo "fresh run on 120 KiB: exit $rc: $(tail -1 fresh.log | cut -c1-120)"; [ $rc -eq 1 ] || fails=1
exit $fails
