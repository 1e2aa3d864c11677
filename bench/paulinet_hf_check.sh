#!/bin/sh
# PauliNet's Hartree-Fock limit on LiH (no Jastrow, no backflow): VMC energy and variance of
# (a) the bare RHF/6-311G determinant, (b) with the nuclear cusp correction of the orbitals,
# (c) with (b) and the electronic cusp factor exp(gamma). (a) must give E_HF within its error
# bar; (b) and (c) show the shift and the variance reduction of the cusps.
# Usage: bench/paulinet_hf_check.sh BUILD_DIR OUT_DIR [EVAL_STEPS] [WALKERS]
set -eu
BIN=${1:?build dir}/src/app/nnvmc
OUT=${2:?output dir}
STEPS=${3:-400} W=${4:-1000}
mkdir -p "$OUT"
run() {  # name nuclear electronic
  "$BIN" train configs/runs/lih_paulinet.yaml run.output="$OUT/$1" run.threads=1 optim.iterations=0 \
    model.paulinet.jastrow=false model.paulinet.backflow=false model.paulinet.cusp_correction="$2" \
    model.paulinet.cusp_electrons="$3" sampler.walkers="$W" sampler.burn_in=200 eval.steps="$STEPS" \
    eval.burn_in=100 > "$OUT/$1.log" 2>&1
  python3 - "$OUT/$1" "$1" <<'PY'
import json, sys
s = json.load(open(sys.argv[1] + "/summary.json"))
print(f"{sys.argv[2]:16s} E = {s['energy']:.5f} +- {s['energy_err']:.5f}  variance {s['variance']:.4f}  "
      f"tau {s['autocorr_time']:.1f}  ({s['steps']} steps x {s['walkers']} walkers)")
PY
}
run plain false false
run nuclear_cusp true false
run both_cusps true true
grep -o "E_HF = [-0-9.]* Eh" "$OUT/plain.log" | head -1
