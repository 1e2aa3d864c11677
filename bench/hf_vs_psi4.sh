#!/usr/bin/env bash
# RHF past the in-core limit (issue 17): nnvmc scf with Cholesky J/K against Psi4 (Debian psi4 on
# the system BLAS) run as its users run it: PK (exact integrals), CD at the same threshold, and DF
# (its default). One thread each, runs one after another; wall seconds of the whole command
# (integrals included). Energies are compared with Psi4 PK's exact one.
# usage: bench/hf_vs_psi4.sh [BUILD] [MOLECULE.xyz] [BASIS]    env: TAUS="1e-5 1e-6", EXACT=1 (also
#        nnvmc's exact direct build: ~13 min for the benzene dimer), MEM_GB=18 (Psi4's memory)
set -euo pipefail
BUILD=${1:-build}; MOL=${2:-bench/molecules/benzene_dimer.xyz}; BASIS=${3:-cc-pvdz}
TAUS=${TAUS:-"1e-5 1e-6"}; MEM_GB=${MEM_GB:-18}
NNVMC=$BUILD/src/app/nnvmc
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); nnvmc $(git rev-parse --short HEAD 2>/dev/null || echo "(not a git checkout)"); $MOL $BASIS, one thread"
run_nnvmc() {  # tau (0: exact)
  local t0=$(date +%s.%N)
  "$NNVMC" scf "$MOL" --basis "$BASIS" --threads 1 --cholesky "$1" --json > /tmp/hf_nnvmc.json
  python3 - "$1" "$(echo "$(date +%s.%N) - $t0" | bc)" <<'PY'
import json, sys
j = json.load(open("/tmp/hf_nnvmc.json"))
print(json.dumps({"program": "nnvmc", "cholesky": float(sys.argv[1]) or None, "e_hf": j["e_hf"],
                  "iterations": j["iterations"], "seconds": round(float(sys.argv[2]), 2)}))
PY
}
{
  for tau in $TAUS; do run_nnvmc "$tau"; done
  [ "${EXACT:-0}" = 1 ] && run_nnvmc 0
  python3 bench/psi4_hf.py "$MOL" --basis "$BASIS" --scf-type pk --memory-gb "$MEM_GB"
  for tau in $TAUS; do python3 bench/psi4_hf.py "$MOL" --basis "$BASIS" --scf-type cd --cholesky "$tau" --memory-gb "$MEM_GB"; done
  python3 bench/psi4_hf.py "$MOL" --basis "$BASIS" --scf-type df --memory-gb "$MEM_GB"
} | tee /tmp/hf_runs.jsonl
python3 - <<'PY'
import json
rows = [json.loads(l) for l in open("/tmp/hf_runs.jsonl")]
ref = next(r for r in rows if r["program"] == "psi4" and r.get("scf_type") == "pk")
print("# program  integrals         seconds  vs Psi4 PK time   E_HF              E - E(Psi4 PK)")
for r in rows:
    kind = r.get("scf_type") or ("cholesky" if r["cholesky"] else "exact")
    if r.get("cholesky"): kind += " tau %.0e" % r["cholesky"]
    print("# %-8s %-16s %8.1f  %6.2fx           %.10f  %+.1e" % (r["program"], kind, r["seconds"],
          r["seconds"] / ref["seconds"], r["e_hf"], r["e_hf"] - ref["e_hf"]))
PY
