#!/usr/bin/env bash
# Issue 17's GPU figures in one device run (prepared; not run yet — no device in the session
# that wrote it). Uses the shared device tools' conventions:
#   here:    ../shared/tools/device/pack.sh nnvmc test_batching test_ccsd batching_ladder
#   device:  run(command="bash .device/run.sh bash bench/ccsd_gpu_figures.sh", carry=[".device"], timeout_s=560)
# Writes under $OUT (the run tool's folder; ./gpu_out without it): summary.txt and one JSON per run.
# Stages, each with its own time limit so a slow one cannot eat the rest (total <= ~9 min):
#   1. tests with a CUDA branch (StagedGemm* incl. cuBLAS, PeakMemory* on the caching allocator,
#      BytesMoved*) and the ladder micro-benchmark
#   2. C4H4 cc-pVDZ conventional: torch-CUDA and cuBLAS staged
#   3. (H2O)6, 8, 10 cc-pVDZ frozen-core CD-CCSD tau 1e-5: torch-CUDA (resident: everything on the
#      device) and cuBLAS staged with --memory below the integrals; per run: s/iteration, set-up
#      (SCF, integrals + Cholesky, cached blocks), per-term TFLOP/s, host<->device bytes per iteration
# Env: ITERS (3), SYSTEMS ("6 8 10"), STAGED_MEMORY (8GiB).
set -u
OUT=${OUT:-gpu_out}; mkdir -p "$OUT"
ITERS=${ITERS:-3}; SYSTEMS=${SYSTEMS:-"6 8 10"}; STAGED_MEMORY=${STAGED_MEMORY:-8GiB}
XYZ=${XYZ:-../shared/reference/water_clusters.xyz}
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
{ nvidia-smi; nproc; } > "$OUT/env.txt" 2>&1
log "env: $(grep -m1 -o 'H200[^|]*' "$OUT/env.txt" | head -1), $(nproc) cores"

timeout 90 test_batching --gtest_filter='StagedGemm*:SplitEquivalence*:PeakMemory*' > "$OUT/tests_batching.txt" 2>&1
log "batching tests rc=$? ($(tail -1 "$OUT/tests_batching.txt"))"
timeout 60 test_ccsd --gtest_filter='BytesMoved*:CachedResidual*' > "$OUT/tests_ccsd.txt" 2>&1
log "ccsd tests rc=$? ($(tail -1 "$OUT/tests_ccsd.txt"))"
for db in "cuda torch" "cpu cublas"; do
  set -- $db
  REPS=2 timeout 60 batching_ladder 12 140 500 "$1" "$2" > "$OUT/ladder_$1_$2.txt" 2>&1
  log "ladder $1/$2 rc=$?"; cat "$OUT/ladder_$1_$2.txt" >> "$OUT/summary.txt"
done

# one summary line per run: s/iteration, set-up, host<->device bytes, per-term TFLOP/s (wall)
summarise() {
  python3 - "$1" "$2" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
try: j = json.load(open(sys.argv[1]))
except Exception as e: print(f"{sys.argv[2]}: no result ({e})"); sys.exit()
h = j.get("bytes_h2d_per_iteration", []); d = j.get("bytes_d2h_per_iteration", [])
print(f"{sys.argv[2]}: n_bf {j['n_basis']} n_chol {j['n_cholesky']} frozen {j['n_frozen']}  "
      f"{j['seconds_per_iteration']:.3f} s/it  set-up: scf {j['seconds_scf']:.1f} s, integrals {j['seconds_integrals']:.1f} s, "
      f"blocks {j.get('seconds_setup', 0):.1f} s  h2d/it {[round(x / 2**20, 1) for x in h]} MiB  d2h/it {[round(x / 2**20, 1) for x in d]} MiB")
it = max(j["iterations"], 1)
for t, s in sorted(j["terms"].items(), key=lambda kv: -kv[1]["seconds"]):
    if s["seconds"] / it > 0.005:
        print(f"    {t:<10} {s['seconds'] / it:8.3f} s/it  {s['flops'] / max(s['seconds'], 1e-12) * 1e-12:7.2f} TFLOP/s  {s['split']}")
PY
}
ccsd() {  # tag limit molecule args...
  local tag=$1 limit=$2 mol=$3; shift 3
  timeout "$limit" nnvmc ccsd "$mol" --basis cc-pvdz --json --max-iterations "$ITERS" --allow-unconverged "$@" \
    > "$OUT/$tag.json" 2> "$OUT/$tag.err"; local rc=$?
  [ $rc -eq 0 ] || log "$tag rc=$rc $(tail -2 "$OUT/$tag.err" | tr '\n' ' ')"
  summarise "$OUT/$tag.json" "$tag"
}

ccsd c4h4_torch_cuda 60 c4h4 --device cuda
ccsd c4h4_cublas_staged 90 c4h4 --backend cublas

for n in $SYSTEMS; do
  python3 - "$XYZ" "$n" "$OUT/w$n.xyz" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines(); i = k = 0
while i < len(lines):
    m = int(lines[i].split()[0])
    if k + 1 == int(sys.argv[2]): open(sys.argv[3], "w").write("\n".join(lines[i:i + 2 + m]) + "\n"); break
    i += 2 + m; k += 1
PY
  lim=$(( n >= 10 ? 200 : (n >= 8 ? 120 : 60) ))
  ccsd "w${n}_fc_torch_cuda" "$lim" "$OUT/w$n.xyz" --frozen-core --cholesky 1e-5 --device cuda
  [ "$n" -le 8 ] && ccsd "w${n}_fc_cublas_staged" "$lim" "$OUT/w$n.xyz" --frozen-core --cholesky 1e-5 --backend cublas --memory "$STAGED_MEMORY"
done
log "done"
