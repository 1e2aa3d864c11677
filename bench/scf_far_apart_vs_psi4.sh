#!/usr/bin/env bash
# H2 with its atoms too far apart for their orbitals to overlap: nnvmc scf (RHF, UHF) and ccsd
# against Psi4 (Debian psi4, reference rhf/uhf, scf_type pk, C1, its sad guess). A stationary SCF
# density whose occupied orbitals are not the lowest of its own Fock matrix is not a solution:
# H2/STO-3G at 30 bohr stepped between H-...H+ and H+...H- and was reported converged at -0.1919 Eh
# (Psi4 1.3.2 reports the same); the exact values here are RHF E(H) + E(H-)/2 - 1/(2R), UHF and
# CCSD 2 E(H) = -0.9331637 in STO-3G.
# usage: bench/scf_far_apart_vs_psi4.sh [BUILD]   env: RS="30 100", BASES="sto-3g cc-pvdz"
# Psi4: apt-get install psi4 libopenblas0-pthread; run with the system python
set -uo pipefail
BUILD=${1:-build}; RS=${RS:-"30 100"}; BASES=${BASES:-"sto-3g cc-pvdz"}
NNVMC=$BUILD/src/app/nnvmc
dir=$(mktemp -d)
cat > "$dir/psi4_h2.py" <<'PY'
import sys, psi4
psi4.core.be_quiet()
R, basis, ref = float(sys.argv[1]), sys.argv[2], sys.argv[3]
psi4.geometry(f"units bohr\nsymmetry c1\nno_reorient\nno_com\nH 0 0 0\nH 0 0 {R}\n")
psi4.set_options({"basis": basis, "reference": ref, "scf_type": "pk", "e_convergence": 1e-10,
                  "d_convergence": 1e-8, "maxiter": 200})
print(psi4.energy("scf"))
PY
echo "# $(date -u +%FT%TZ) nnvmc $(git rev-parse --short HEAD 2>/dev/null || echo '?'); H2, R in bohr"
for R in $RS; do
  printf 'units: bohr\natoms:\n  - [H, 0, 0, 0]\n  - [H, 0, 0, %s]\n' "$R" > "$dir/h2_$R.yaml"
  for B in $BASES; do
    for ref in rhf uhf; do
      flag=$([ $ref = uhf ] && echo --uhf)
      e=$("$NNVMC" scf "$dir/h2_$R.yaml" --basis "$B" $flag --json 2>/dev/null |
          python3 -c 'import json,sys; print(json.load(sys.stdin)["e_hf"])' 2>/dev/null || echo "not converged")
      # (in the scratch directory: Psi4 writes timer.dat and psi.*.clean where it runs)
      p=$(cd "$dir" && PYTHONPATH=/usr/lib/x86_64-linux-gnu /usr/bin/python3 psi4_h2.py "$R" "$B" "$ref" 2>/dev/null ||
          echo "not converged")
      echo "R=$R $B $ref  nnvmc $e  psi4 $p"
    done
    c=$("$NNVMC" ccsd "$dir/h2_$R.yaml" --basis "$B" --json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["e_ccsd"])' 2>/dev/null || echo "not converged")
    echo "R=$R $B ccsd nnvmc $c"
  done
done
rm -rf "$dir"
