#!/usr/bin/env bash
# `mpirun -np K nnvmc eval CHECKPOINT` gives the energy, error bar and variance of one process:
# the walkers are split over the ranks, each walker draws from its own stream, and rank 0 alone
# prints the JSON (one object on stdout, not one per rank). Checked for 2 and 3 ranks with 31
# walkers (uneven splits) against one process, to 1e-10 relative. `scf` and `ccsd` under mpirun
# print one result too (scf printed one per rank), and `config` its settings once.
# Usage: mpi_eval.sh NNVMC <mpirun> <flags...>
set -u
nnvmc=$1; shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/run.yaml" <<YAML
system: {molecule: lih}
model: {ferminet: {hidden_dims: [[8, 4]], determinants: 1}}
sampler: {walkers: 16, burn_in: 2, steps_per_iteration: 1}
optim: {iterations: 2}
pretrain: {steps: 0}
eval: {steps: 0}
run: {threads: 1, output: $dir/run}
YAML
fail() { echo "FAIL: $*"; exit 1; }
timeout 120 "$nnvmc" train "$dir/run.yaml" > "$dir/train.log" 2>&1 || { cat "$dir/train.log"; fail "training"; }
ev() { timeout 120 "$@" "$nnvmc" eval "$dir/run/checkpoint.h5" --steps 6 --walkers 31 --seed 5 --json; }
ev "$@" -np 1 > "$dir/np1.json" 2> "$dir/np1.err" || { cat "$dir/np1.err"; fail "eval with 1 rank"; }
for np in 2 3; do
  ev "$@" -np $np > "$dir/np$np.json" 2> "$dir/np$np.err" || { cat "$dir/np$np.err"; fail "eval with $np ranks"; }
  python3 - "$dir/np1.json" "$dir/np$np.json" $np <<'PY' || fail "eval with $3 ranks differs"
import json, sys
one, k = (json.load(open(f)) for f in sys.argv[1:3])  # one object each: a second would not parse
for key in ("energy", "energy_err", "variance"):
    a, b = one[key], k[key]
    assert abs(a - b) <= 1e-10 * abs(a), f"{key}: {a!r} (1 rank) vs {b!r} ({sys.argv[3]} ranks)"
print(f"{sys.argv[3]} ranks: energy {k['energy']:.12f} +- {k['energy_err']:.2e}, the same as one process")
PY
done
for cmd in "scf h2 --basis sto-3g" "ccsd h2 --basis sto-3g"; do
  timeout 120 "$@" -np 2 $nnvmc $cmd --json > "$dir/two.json" 2> "$dir/two.err" || { cat "$dir/two.err"; fail "$cmd"; }
  [ "$(grep -c . "$dir/two.json")" -le 1 ] || python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$dir/two.json" \
    || { cat "$dir/two.json"; fail "$cmd with 2 ranks printed more than one result"; }
  echo "$cmd: one result from 2 ranks"
done
# config prints the resolved settings once (it printed them once per rank)
timeout 60 "$nnvmc" config "$dir/run.yaml" > "$dir/config1.txt" 2>/dev/null || fail "config"
timeout 120 "$@" -np 2 "$nnvmc" config "$dir/run.yaml" > "$dir/config2.txt" 2>/dev/null || fail "config with 2 ranks"
cmp -s "$dir/config1.txt" "$dir/config2.txt" || fail "config with 2 ranks printed $(wc -l < "$dir/config2.txt") lines, one process $(wc -l < "$dir/config1.txt")"
echo "config: printed once by 2 ranks"
# fewer walkers than ranks: exit 2, saying how many ranks or what to raise (it named only sampler.walkers)
timeout 120 "$@" -np 3 "$nnvmc" eval "$dir/run/checkpoint.h5" --steps 2 --walkers 2 > "$dir/few.out" 2> "$dir/few.err"
rc=$?
[ $rc -eq 2 ] || { cat "$dir/few.err"; fail "2 walkers on 3 ranks: exit $rc, not 2"; }
grep -q "run with at most 2 ranks, or with more walkers" "$dir/few.err" || { cat "$dir/few.err"; fail "2 walkers on 3 ranks: no advice"; }
echo "2 walkers on 3 ranks: refused with the ranks it allows"
echo ok
