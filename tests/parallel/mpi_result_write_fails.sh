#!/usr/bin/env bash
# Two ranks, and rank 0 cannot write result.h5 (a file-size limit, as a full disk would): both
# ranks write the checkpoint together (its walkers are gathered), then stop with rank 0's reason
# (exit 1); the run resumes on two ranks. Usage: mpi_result_write_fails.sh NNVMC <mpirun> <flags...>
set -eu
nnvmc=$1; shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/run.yaml" <<YAML
system: {molecule: he}
model: {ferminet: {hidden_dims: [[4, 2]], determinants: 1}}
sampler: {walkers: 8, steps_per_iteration: 2, burn_in: 2}
optim: {iterations: 4}
pretrain: {steps: 0}
eval: {steps: 4, burn_in: 2}
run: {threads: 1, checkpoint_every: 1000, output: $dir/out}
YAML
set +e
# 50 KiB: the checkpoint (about 38 KiB) fits, result.h5 outgrows it in its first rows.
# The limit is the ranks' only, and their MPI set-up writes no files: TCP between the ranks,
# PMIx's hash store instead of shared-memory files.
OMPI_MCA_btl=self,tcp PMIX_MCA_gds=hash timeout 120 "$@" -np 2 prlimit --fsize=51200 "$nnvmc" train "$dir/run.yaml" \
  > "$dir/log" 2>&1
rc=$?
set -e
cat "$dir/log"
[ "$rc" = 1 ] || { echo "FAIL: exit code $rc, expected 1"; exit 1; }
grep -q "result.h5: cannot write.*File too large; training stopped at iteration .*whose checkpoint was written" "$dir/log" ||
  { echo "FAIL: no message of rank 0's write failure"; exit 1; }
[ -f "$dir/out/checkpoint.h5" ] || { echo "FAIL: no checkpoint"; exit 1; }
"$@" -np 2 "$nnvmc" train --resume "$dir/out" > "$dir/log2" 2>&1 || { cat "$dir/log2"; echo "FAIL: resume"; exit 1; }
grep -q "their rows are NaN" "$dir/log2" || { cat "$dir/log2"; echo "FAIL: the rows before the checkpoint were not filled"; exit 1; }
echo ok
