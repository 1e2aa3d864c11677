#!/usr/bin/env bash
# Set-up of Cholesky CCSD (`nnvmc ccsd --cholesky TAU`): the RHF on the same Cholesky vectors as
# the CCSD (one decomposition, the default) against the RHF on exact ERIs (`--exact-scf`: the ERIs
# are computed for the SCF and their columns again for the decomposition). Runs alternate, one
# CCSD iteration each (--allow-unconverged); per run: RHF seconds, integral seconds (decomposition
# + MO transformation), their sum, E(HF) and the first-iteration E(CCSD); medians per mode.
# usage: bench/ccsd_setup_cholesky.sh [BUILD] ["6 8"]   env: ROUNDS (3), TAU (1e-5), THREADS (all
#        cores), XYZ (bench/molecules/water_clusters.xyz), FROZEN (1: --frozen-core)
set -euo pipefail
BUILD=${1:-build}; SIZES=${2:-"6"}; ROUNDS=${ROUNDS:-3}; TAU=${TAU:-1e-5}
XYZ=${XYZ:-bench/molecules/water_clusters.xyz}; THREADS=${THREADS:-$(nproc)}
NNVMC=$BUILD/src/app/nnvmc; TMP=$(mktemp -d)
fc=(); [ "${FROZEN:-1}" = 1 ] && fc=(--frozen-core)
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); nnvmc $(git rev-parse --short HEAD 2>/dev/null || echo "(not a git checkout)"); tau $TAU, $THREADS threads, ${fc[*]:-all-electron}"
for n in $SIZES; do
  python3 bench/xyz_frame.py "$XYZ" "$n" "$TMP/w$n.xyz"
  for r in $(seq "$ROUNDS"); do
    for mode in shared exact; do
      extra=(); [ $mode = exact ] && extra=(--exact-scf)
      OMP_NUM_THREADS=$THREADS "$NNVMC" ccsd "$TMP/w$n.xyz" --cholesky "$TAU" "${fc[@]}" --max-iterations 1 \
        --allow-unconverged --json "${extra[@]}" 2> /dev/null > "$TMP/out.json"
      python3 - "$TMP/out.json" "$n" "$mode" "$r" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
s, i = j["seconds_scf"], j["seconds_integrals"]
print(f"(H2O){sys.argv[2]:<3} {sys.argv[3]:<7} round {sys.argv[4]}  rhf {s:7.2f} s  integrals {i:7.2f} s  "
      f"sum {s + i:7.2f} s  E(HF) {j['e_hf']:.10f}  E(CCSD, it 1) {j['e_ccsd']:.10f}  vectors {j['n_cholesky']}")
PY
    done
  done
done | tee "$TMP/runs.txt"
python3 - "$TMP/runs.txt" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\(H2O\)\d+)\s+(\w+).*rhf\s+([\d.]+).*integrals\s+([\d.]+).*sum\s+([\d.]+).*E\(HF\) (\S+)", line)
    if m: rows.setdefault((m[1], m[2]), []).append((float(m[3]), float(m[4]), float(m[5]), float(m[6])))
for (mol, mode), v in sorted(rows.items()):
    med = [statistics.median(x[k] for x in v) for k in range(3)]
    print(f"# {mol} {mode:<7} median rhf {med[0]:.2f} s, integrals {med[1]:.2f} s, sum {med[2]:.2f} s")
for mol in sorted({k[0] for k in rows}):
    if (mol, "shared") in rows and (mol, "exact") in rows:
        a = statistics.median(x[2] for x in rows[(mol, "exact")]); b = statistics.median(x[2] for x in rows[(mol, "shared")])
        de = rows[(mol, "shared")][0][3] - rows[(mol, "exact")][0][3]
        print(f"# {mol}: RHF + integrals {a:.2f} s -> {b:.2f} s ({a / b:.2f}x); E(HF) shared - exact {de:+.2e} Eh")
PY
rm -rf "$TMP"
