#!/usr/bin/env bash
# Time per CCSD iteration, nnvmc vs Psi4 1.3.2 (conventional RHF-CCSD, ccenergy), cc-pVDZ,
# all-electron, same thread count, on (H2O)n from bench/molecules/water_clusters.xyz (a copy of ../shared/reference/water_clusters.xyz) and
# on any molecule of configs/molecules (e.g. c4h4).
# usage: bench/ccsd_water_clusters.sh "4 5 6 c4h4" [NNVMC] [THREADS] [CHOLESKY_TAU]
# nnvmc: mean wall time of the first ITERS iterations (--max-iterations, --allow-unconverged),
# conventional integrals and Cholesky (tau). Psi4: bench/psi4_ccsd_periter.py (two runs with
# different convergence thresholds; the wall-time difference over the iteration difference).
set -euo pipefail
source "$(dirname "$0")/ccsd_system.sh"
SYSTEMS=${1:-"1 2 3"}; NNVMC=${2:-build/src/app/nnvmc}; THREADS=${3:-2}; TAU=${4:-1e-5}; ITERS=${ITERS:-4}
XYZ=${XYZ:-bench/molecules/water_clusters.xyz}
TMP=$(mktemp -d)
printf "%-6s %5s %12s %12s %12s %12s %12s\n" system n_bf nnvmc_conv nnvmc_chol psi4 psi4/conv psi4/chol
for sys in $SYSTEMS; do
  resolve_system "$sys" "$TMP"; psi_args=("${psi[@]}")
  cc=(ccsd "$mol" --basis cc-pvdz --json --max-iterations "$ITERS" --allow-unconverged)
  OMP_NUM_THREADS=$THREADS "$NNVMC" "${cc[@]}" > "$TMP/conv.json" 2> /dev/null
  OMP_NUM_THREADS=$THREADS "$NNVMC" "${cc[@]}" --cholesky "$TAU" > "$TMP/chol.json" 2> /dev/null
  python3 bench/psi4_ccsd_periter.py "${psi_args[@]}" --threads "$THREADS" > "$TMP/psi.json"
  python3 - "$name" "$TMP/conv.json" "$TMP/chol.json" "$TMP/psi.json" <<'PY'
import json, sys
name, a, b, p = sys.argv[1], *(json.load(open(f)) for f in sys.argv[2:5])
nbf = a["n_basis"]; t = p["seconds_per_iteration"]  # null: below the noise of Psi4's two runs
psi = f"{t:>12.3f} {t / a['seconds_per_iteration']:>11.2f}x {t / b['seconds_per_iteration']:>11.2f}x" if t else \
    f"{'n/a':>12} {'n/a':>12} {'n/a':>12}"
print(f"{name:<6} {nbf:>5} {a['seconds_per_iteration']:>12.3f} {b['seconds_per_iteration']:>12.3f} {psi}"
      f"   (psi4 runs {p['wall_seconds']} s, iterations {p['iterations']})", flush=True)
PY
done
rm -rf "$TMP"
