#!/usr/bin/env bash
# Density-fitted SCF (nnvmc scf --df, def2-universal-JKFIT) against Psi4 1.3.2's scf_type df with
# the same auxiliary functions (Psi4: df_basis_scf def2-qzvpp-jkfit), both on THREADS threads, Psi4 on
# OpenBLAS (bench/psi4_hf.py). Runs alternate, REPS of each; medians of the whole command's wall
# seconds (integrals included), and the energy difference. Cases: the benzene dimer RHF/cc-pVDZ
# (228 functions, 1116 auxiliary) and the Fe atom UHF/cc-pVDZ quintet from the SAD guess (Psi4's
# solution; stability analysis off on both sides).
# usage: bench/df_vs_psi4.sh [BUILD]    env: REPS=3, THREADS=1 (both programs')
set -euo pipefail
BUILD=${1:-build}; REPS=${REPS:-3}; THREADS=${THREADS:-1}
NNVMC=$BUILD/src/app/nnvmc
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
printf "1\nFe atom\nFe 0 0 0\n" > "$TMP/fe.xyz"
printf "units: angstrom\ncharge: 0\nspin: 4\natoms:\n  - [Fe, 0.0, 0.0, 0.0]\n" > "$TMP/fe.yaml"
export PYTHONPATH=/usr/lib/x86_64-linux-gnu${PYTHONPATH:+:$PYTHONPATH}
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); nnvmc $(git rev-parse --short HEAD 2>/dev/null || echo '?'); $THREADS thread(s), $REPS runs each"
nn() {  # case-args...
  local t0=$(date +%s.%N)
  "$NNVMC" scf "$@" --df --threads "$THREADS" --json > "$TMP/nn.json"
  python3 -c "import json,sys; j=json.load(open('$TMP/nn.json')); print(json.dumps({'program':'nnvmc','e_hf':j['e_hf'],'seconds':round(float(sys.argv[1]),2)}))" "$(echo "$(date +%s.%N) - $t0" | bc)"
}
for case in benzene fe; do
  for ((i = 0; i < REPS; i++)); do
    if [ $case = benzene ]; then
      nn bench/molecules/benzene_dimer.xyz --basis cc-pvdz
      python3 bench/psi4_hf.py bench/molecules/benzene_dimer.xyz --scf-type df --df-basis def2-qzvpp-jkfit --e-conv 1e-10 --d-conv 1e-8 --threads "$THREADS"
    else
      nn "$TMP/fe.yaml" --basis cc-pvdz --uhf --guess sad --stability off
      python3 bench/psi4_hf.py "$TMP/fe.xyz" --scf-type df --df-basis def2-qzvpp-jkfit --reference uhf --multiplicity 5 --e-conv 1e-10 --d-conv 1e-8 --threads "$THREADS"
    fi
  done | sed "s/^{/{\"case\": \"$case\", /"
done | tee "$TMP/runs.jsonl"
python3 - "$TMP/runs.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for case in ("benzene", "fe"):
    r = {p: [x for x in rows if x["case"] == case and x["program"] == p] for p in ("nnvmc", "psi4")}
    t = {p: statistics.median(x["seconds"] for x in v) for p, v in r.items()}
    print("# %-8s nnvmc %.2f s, Psi4 %.2f s (medians): nnvmc/Psi4 %.2fx; E(nnvmc) - E(Psi4) %+.1e Eh"
          % (case, t["nnvmc"], t["psi4"], t["nnvmc"] / t["psi4"], r["nnvmc"][0]["e_hf"] - r["psi4"][0]["e_hf"]))
PY
