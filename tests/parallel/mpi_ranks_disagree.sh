#!/usr/bin/env bash
# Ranks that were given different runs stop before they train, with exit 2 and the first
# difference: other arguments (an MPMD launch), or the same arguments reading different molecule
# files (each rank in its own working directory). Before, both finished a wrong run with exit 0.
# A rank whose own checks fail (here: no basis sets on rank 1) stops the job before rank 0 writes
# anything.
# Usage: mpi_ranks_disagree.sh NNVMC <mpirun> <flags...>
set -u
nnvmc=$1; shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/a" "$dir/b"
printf 'units: bohr\natoms: [[H, 0, 0, 0], [H, 0, 0, 1.4]]\n' > "$dir/a/mol.yaml"
printf 'units: bohr\natoms: [[H, 0, 0, 0], [H, 0, 0, 1.5]]\n' > "$dir/b/mol.yaml"
cat > "$dir/run.yaml" <<YAML
system: {molecule: ./mol.yaml}
model: {ferminet: {hidden_dims: [[8, 4]], determinants: 1}}
sampler: {walkers: 8, burn_in: 2, steps_per_iteration: 1}
optim: {iterations: 2}
pretrain: {steps: 0}
eval: {steps: 2, burn_in: 1}
run: {threads: 1}
YAML
fail() { echo "FAIL: $*"; exit 1; }
check() {  # name expected-text log rc
  [ "$4" = 2 ] || { cat "$3"; fail "$1: exit $4, expected 2"; }
  grep -q "$2" "$3" || { cat "$3"; fail "$1: no '$2'"; }
  [ ! -e "$dir/$1/result.h5" ] || fail "$1: a result was written"
  echo "$1: exit 2, $(grep -o "error.*" "$3" | head -1)"
}
timeout 120 "$@" -np 1 -wdir "$dir/a" "$nnvmc" train "$dir/run.yaml" run.output="$dir/args" : \
  -np 1 -wdir "$dir/a" "$nnvmc" train "$dir/run.yaml" run.output="$dir/args" sampler.walkers=16 > "$dir/log1" 2>&1
check args "different arguments: rank 1 has 'sampler.walkers=16' where rank 0 has '(nothing)'" "$dir/log1" $?
timeout 120 "$@" -np 1 -wdir "$dir/a" "$nnvmc" train "$dir/run.yaml" run.output="$dir/files" : \
  -np 1 -wdir "$dir/b" "$nnvmc" train "$dir/run.yaml" run.output="$dir/files" > "$dir/log2" 2>&1
check files "different settings or molecules: rank 1 has '  atom Z=1 at 0 0 1.5' where rank 0 has '  atom Z=1 at 0 0 1.3999999999999999'" "$dir/log2" $?
timeout 120 "$@" -np 1 -wdir "$dir/a" "$nnvmc" train "$dir/run.yaml" run.output="$dir/basis" pretrain.steps=2 : \
  -np 1 -wdir "$dir/a" -x NNVMC_BASIS_DIR=/nonexistent "$nnvmc" train "$dir/run.yaml" run.output="$dir/basis" \
  pretrain.steps=2 > "$dir/log3" 2>&1
check basis "\[rank 1 of 2\]: pretrain.basis: unknown basis" "$dir/log3" $?
[ ! -e "$dir/basis" ] || { ls -la "$dir/basis"; fail "basis: rank 0 wrote the output directory"; }
