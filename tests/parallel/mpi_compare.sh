#!/usr/bin/env bash
# `mpirun -np 2 nnvmc compare`: the cells are shared out over the ranks (each runs its own as
# one-process children), the CCSD(T) references are computed by both ranks together, and rank 0
# writes one table with every cell. Usage: mpi_compare.sh NNVMC <mpirun> <flags...>
set -eu
nnvmc=$1; shift
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/spec.yaml" <<YAML
ansatze:
  - {label: tiny, type: ferminet, ferminet: {hidden_dims: [[8, 4]], determinants: 1}}
molecules: [h2, he, lih]
iterations: 3
walkers: 8
eval_steps: 4
threads: 1
references: ccsd_t
reference_basis: sto-3g
overrides: [sampler.burn_in=4, sampler.steps_per_iteration=2, eval.burn_in=2, pretrain.steps=0]
output: $dir/out
YAML
# --max-cells N starts N cells in all, not N per rank
"$@" -np 2 "$nnvmc" compare "$dir/spec.yaml" --no-plots --max-cells 1 > "$dir/max_cells.txt" 2>&1 || true
started=$(cat "$dir"/out/*/*/cell.json 2>/dev/null | grep -c '"status": "done"' || true)
[ "$started" = 1 ] || { echo "--max-cells 1 over 2 ranks ran $started cells"; cat "$dir/max_cells.txt"; exit 1; }
grep -q "3 of 3 cells to run, 1 of them now (--max-cells)" "$dir/max_cells.txt" || { cat "$dir/max_cells.txt"; exit 1; }
"$@" -np 2 "$nnvmc" compare "$dir/spec.yaml" --no-plots
"$nnvmc" ccsd lih --basis sto-3g --triples --json > "$dir/lih_one_process.json"
python3 - "$dir/out" "$dir/lih_one_process.json" <<'PY'
import csv, glob, json, os, sys
out = sys.argv[1]
one = json.load(open(sys.argv[2]))["e_ccsd_t"]
rows = list(csv.DictReader(open(os.path.join(out, "compare.csv"))))
assert len(rows) == 3, rows
ranks = {}
for path in sorted(glob.glob(os.path.join(out, "**", "cell.json"), recursive=True)):
    j = json.load(open(path))
    assert j["status"] == "done", (path, j)
    ranks[os.path.basename(os.path.dirname(path))] = j["runner_rank"]
print("cells and the rank that ran them:", ranks)
assert sorted(set(ranks.values())) == [0, 1], ranks
refs = json.load(open(os.path.join(out, "references.json")))
print({k: v["energy"] for k, v in refs.items()}, "one process, LiH:", one)
assert abs(refs["lih"]["energy"] - one) < 1e-10, (refs["lih"], one)  # CCSD(T) over 2 ranks = 1 process
assert os.path.exists(os.path.join(out, "report.md"))
print("ok")
PY
# Cells that fail on rank 1 are named with their reason on rank 0's console, not only in
# report.md; two ranks' cells on this node's cores are counted against them (the warning counted
# one rank's)
sed -e "s|output: $dir/out|output: $dir/failing|" -e "s|^threads: 1|threads: $(getconf _NPROCESSORS_ONLN)|" \
    -e "s|pretrain.steps=0\]|pretrain.steps=0, run.memory_budget=1KB]|" "$dir/spec.yaml" > "$dir/failing.yaml"
if "$@" -np 2 "$nnvmc" compare "$dir/failing.yaml" --no-plots > "$dir/failing.txt" 2>&1; then
  echo "a comparison whose cells all fail exited 0"; cat "$dir/failing.txt"; exit 1
fi
grep -q "FAILED .* (rank 1): " "$dir/failing.txt" || { echo "rank 1's failures not named"; cat "$dir/failing.txt"; exit 1; }
grep -q "2 ranks on this node x 1 jobs x $(getconf _NPROCESSORS_ONLN) threads exceed the $(getconf _NPROCESSORS_ONLN) cores" "$dir/failing.txt" ||
  { echo "no oversubscription warning for 2 ranks"; cat "$dir/failing.txt"; exit 1; }
echo "ok: rank 1's failures named"
