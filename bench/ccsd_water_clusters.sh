#!/usr/bin/env bash
# CCSD time per iteration of nnvmc vs Psi4 (conventional CCSD) on (H2O)n, cc-pVDZ, same threads.
# usage: bench/ccsd_water_clusters.sh NMAX [NNVMC] [extra nnvmc ccsd args, e.g. --cholesky 1e-5]
# Psi4 reports only its whole wall time; its per-iteration time is bounded above by wall / iterations.
set -euo pipefail
NMAX=${1:-3}; NNVMC=${2:-build-cc/src/app/nnvmc}; shift $(( $# > 2 ? 2 : $# )) || true
XYZ=../shared/reference/water_clusters.xyz
TMP=$(mktemp -d)
printf "%-3s %-8s %-12s %-6s %-10s %-10s %-6s %-14s %s\n" n n_basis nnvmc_s/it it nnvmc_wall psi4_wall it psi4_wall/it ratio
for n in $(seq 1 "$NMAX"); do
  python3 - "$XYZ" "$n" "$TMP/w$n.xyz" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines(); i = k = 0
while i < len(lines):
    m = int(lines[i].split()[0])
    if k + 1 == int(sys.argv[2]): open(sys.argv[3], "w").write("\n".join(lines[i:i + 2 + m]) + "\n"); break
    i += 2 + m; k += 1
PY
  t0=$(date +%s.%N)
  "$NNVMC" ccsd "$TMP/w$n.xyz" --basis cc-pvdz --json "$@" > "$TMP/nn$n.json"
  t1=$(date +%s.%N)
  python3 /work/shared/tools/psi4_reference.py "$XYZ" cc-pvdz --frame "$n" --method ccsd --threads 2 > "$TMP/psi$n.json"
  python3 - "$n" "$TMP/nn$n.json" "$TMP/psi$n.json" "$t0" "$t1" <<'PY'
import json, sys
n, a, b = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
wall = float(sys.argv[5]) - float(sys.argv[4]); psi_it = b["wall_seconds"] / b["cc_iterations"]
print(f"{n:<3} {a['n_basis']:<8} {a['seconds_per_iteration']:<12.3f} {a['iterations']:<6} {wall:<10.1f} "
      f"{b['wall_seconds']:<10.1f} {b['cc_iterations']:<6} {psi_it:<14.3f} {psi_it / a['seconds_per_iteration']:.2f}x"
      f"   dE(CCSD) {a['e_ccsd'] - b['e_ccsd']:+.1e}")
PY
done
rm -rf "$TMP"
