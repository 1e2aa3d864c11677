#!/usr/bin/env bash
# Issue 17's GPU figures in one device run (prepared; not run yet — no device in the sessions
# that wrote it), on the lent H200 or H100 (the roofline takes the card's bandwidth). Uses the
# shared device tools' conventions:
#   here:    bench/device_packs.sh ccsd   (.device-ccsd: nnvmc test_batching test_ccsd batching_ladder)
#   device:  run(command="bash .device-ccsd/run.sh bash bench/ccsd_gpu_figures.sh", carry=[".device-ccsd"], timeout_s=540)
# Rehearse on the CPU first: bench/device_dry_run.sh bench/ccsd_gpu_figures.sh.
# Writes under $OUT (the run tool's folder; ./gpu_out without it): summary.txt, one JSON and one
# log (.err: per-iteration lines with their seconds, so a run cut by its limit still shows how far
# it got) per run.
# Stages in priority order (STAGES; each with its own time limit; the defaults add up to more than
# one device call, so the tail is what a short call loses):
#   w10      (H2O)10 cc-pVDZ frozen-core CD-CCSD tau 1e-5, torch-CUDA, resident (integrals,
#            cached blocks, amplitudes and DIIS on the GPU): the goal's ≤ 8 s/iteration      150 s
#   w8       (H2O)8, the same                                                                    80 s
#   w8staged (H2O)8 through the staged cuBLAS backend, --memory 2GiB: the GPU memory it may hold,
#            less than half of (H2O)8's Cholesky vectors and cached blocks (4.9 GB, 3.1 GB of them
#            the packed ladder), so they stay in host memory and stream (pinned buffers, three
#            streams; goal ≤ 1.5x the resident time), H2D bytes/iteration, device peak   100 s
#   c4h4t    C4H4 conventional, resident, converged, with (T) on the GPU                          60 s
#   w6t      (H2O)6 frozen-core CD, resident, converged, with (T) (its GEMMs vs its W / energy
#            kernels at a size where the GPU is busy)                                           120 s
#   w8host   (H2O)8 torch-CUDA with --resident off (every contraction uploads its operands)       80 s
#   ladder   the ladder micro-benchmark, torch-CUDA and cuBLAS staged                             80 s
#   tests    test_batching's StagedGemm* (cuBLAS vs torch) and PeakMemory* (caching allocator),
#            test_ccsd's Triples* ((T)'s CUDA kernels vs the host loops)                        60 s
#   w6       (H2O)6 resident and staged                                                          100 s
#   cpu16    (H2O)8 on the 16 CPU cores of the same machine, 2 iterations (GPU/CPU ratio)        150 s
# Per run: s/iteration (each iteration: the first includes warm-up), set-up (SCF, integrals +
# Cholesky, cached blocks), per-term TFLOP/s, host<->device bytes per iteration.
# Env: ITERS (3), STAGES, STAGED_MEMORY (2GiB), XYZ (bench/molecules/water_clusters.xyz);
# DRY_WATER / DRY_C4H4 (bench/device_dry_run.sh: every cluster becomes (H2O)DRY_WATER, C4H4 DRY_C4H4).

set -u
OUT=${OUT:-gpu_out}; mkdir -p "$OUT"
ITERS=${ITERS:-3}; STAGED_MEMORY=${STAGED_MEMORY:-2GiB}
STAGES=${STAGES:-"w10 w8 w8staged c4h4t w8host ladder tests w6 cpu16 w6t"}
XYZ=${XYZ:-bench/molecules/water_clusters.xyz}
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
{ nvidia-smi; nproc; } > "$OUT/env.txt" 2>&1
GPU=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1)
log "env: ${GPU:-no GPU}, $(nproc) cores"
# the roofline's device: DGEMM as measured on the lent H200 (47.7 TFLOP/s; the H100 SXM has the
# same FP64 units, the PCIe card about 3/4 of them) and the card's specified memory bandwidth
case "$GPU" in
  *H100*PCIe*) ROOF=(--peak-tflops 36 --bandwidth-tbs 2.0) ;;
  *H100*)      ROOF=(--peak-tflops 47.7 --bandwidth-tbs 3.35) ;;
  *)           ROOF=(--peak-tflops 47.7 --bandwidth-tbs 4.8) ;;  # the H200
esac
[ -f "$XYZ" ] || { log "no $XYZ"; exit 1; }
# the GPU's measured rates (GEMM, copy, host<->device link) land here and come back with $OUT
export NNVMC_CACHE_DIR="$OUT/cost_model"

# one summary line per run: s/iteration, set-up, host<->device bytes, per-term TFLOP/s (wall)
summarise() {
  python3 - "$1" "$2" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
try: j = json.load(open(sys.argv[1]))
except Exception as e: print(f"{sys.argv[2]}: no result ({e})"); sys.exit()
h = j.get("bytes_h2d_per_iteration", []); d = j.get("bytes_d2h_per_iteration", [])
its = [round(x, 3) for x in j.get("seconds_iterations", [])]
print(f"{sys.argv[2]}: n_bf {j['n_basis']} n_chol {j['n_cholesky']} frozen {j['n_frozen']} resident {j.get('resident')}  "
      f"{j['seconds_per_iteration']:.3f} s/it {its}  set-up: scf {j['seconds_scf']:.1f} s, integrals {j['seconds_integrals']:.1f} s, "
      f"blocks {j.get('seconds_setup', 0):.1f} s  h2d/it {[round(x / 2**20, 1) for x in h]} MiB  d2h/it {[round(x / 2**20, 1) for x in d]} MiB"
      + (f"  E(CCSD) {j['e_ccsd']:.10f} ({j['iterations']} its, converged {j['converged']})" if j.get("converged") else "")
      + (f"  (T) {j['e_t']:.10f} in {j['seconds_triples']:.2f} s" if "e_t" in j else "")
      + (f"  device peak {j['device_peak_bytes'] / 2**30:.2f} of {j['device_budget_bytes'] / 2**30:.2f} GiB"
         if j.get("device_budget_bytes") else ""))
it = max(j["iterations"], 1)
if h and j["seconds_per_iteration"] > 0:  # H2D bytes over an iteration's wall time vs the link's measured peak
    import os
    link = 0.0
    try:
        for line in open(os.path.join(os.environ.get("NNVMC_CACHE_DIR", ""), "cost_model.tsv")):
            if line.startswith("cuda"): link = max(link, float(line.split("\t")[1].split()[1]))
    except OSError: pass
    rate = h[-1] / j["seconds_per_iteration"] / 1e9
    print(f"    h2d {rate:.2f} GB/s sustained over the last iteration" + (f" (link measured {link / 1e9:.1f} GB/s)" if link else ""))
for t, s in sorted(j["terms"].items(), key=lambda kv: -kv[1]["seconds"]):
    if s["seconds"] / it > 0.005:
        print(f"    {t:<10} {s['seconds'] / it:8.3f} s/it  {s['flops'] / max(s['seconds'], 1e-12) * 1e-12:7.2f} TFLOP/s  {s['split']}")
PY
}
triples_terms() {  # (T)'s terms in all (not per iteration): seconds, share of (T), TFLOP/s
  python3 - "$1" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
try: j = json.load(open(sys.argv[1]))
except Exception as e: print(f"(T) terms: no result ({e})"); sys.exit()
total = j.get("seconds_triples", 0)
print(f"    (T) {j.get('e_t', float('nan')):.10f} Eh in {total:.2f} s:" + "".join(
    f"  {t} {s['seconds']:.2f} s ({100 * s['seconds'] / max(total, 1e-12):.0f} %, {s['flops'] / max(s['seconds'], 1e-12) * 1e-12:.2f} TFLOP/s)"
    for t, s in sorted(j["terms"].items()) if t.startswith("triples")))
PY
}
ccsd() {  # tag limit molecule args... (ITERS iterations unless the args converge it)
  local tag=$1 limit=$2 mol=$3; shift 3
  timeout "$limit" nnvmc ccsd "$mol" --basis cc-pvdz --json "$@" > "$OUT/$tag.json" 2> "$OUT/$tag.err"; local rc=$?
  [ $rc -eq 0 ] || log "$tag rc=$rc $(grep -v '^\s*$' "$OUT/$tag.err" | tail -2 | tr '\n' ' ')"
  summarise "$OUT/$tag.json" "$tag"
}
short=(--max-iterations "$ITERS" --allow-unconverged)
cd_fc=(--frozen-core --cholesky 1e-5)
C4H4=${DRY_C4H4:-c4h4}
water() {  # n -> $OUT/w$n.xyz (frame n of $XYZ, or frame DRY_WATER in a rehearsal)
  [ -f "$OUT/w$1.xyz" ] && return
  python3 bench/xyz_frame.py "$XYZ" "${DRY_WATER:-$1}" "$OUT/w$1.xyz"
}

for stage in $STAGES; do
  t0=$SECONDS
  case $stage in
    w10) water 10; ccsd w10_fc_resident 150 "$OUT/w10.xyz" "${cd_fc[@]}" "${short[@]}" --device cuda ;;
    w8) water 8; ccsd w8_fc_resident 80 "$OUT/w8.xyz" "${cd_fc[@]}" "${short[@]}" --device cuda
      # each term's intensity, the most this card can reach at it, and what it reached (the 40 % rule)
      python3 bench/ccsd_term_roofline.py "$OUT/w8_fc_resident.json" "${ROOF[@]}" --measured 2>&1 | tee -a "$OUT/summary.txt" ;;
    w8staged) water 8
      ccsd w8_fc_cublas_staged 100 "$OUT/w8.xyz" "${cd_fc[@]}" "${short[@]}" --backend cublas --memory "$STAGED_MEMORY" ;;
    c4h4t) ccsd c4h4_resident_triples 60 "$C4H4" --device cuda:0 --triples  # a device with its index
      # against Psi4 (../shared/reference/ccsd.csv: C4H4/cc-pVDZ CCSD -154.2256869416, CCSD(T) -154.2509381358)
      python3 - "$OUT/c4h4_resident_triples.json" <<'PY' | tee -a "$OUT/summary.txt"
import json, sys
try: j = json.load(open(sys.argv[1]))
except Exception as e: print(f"c4h4 vs Psi4: no result ({e})"); sys.exit()
print(f"c4h4 vs Psi4: dE(CCSD) {j['e_ccsd'] + 154.2256869416:+.2e}  dE(CCSD(T)) {j.get('e_ccsd_t', 0) + 154.2509381358:+.2e} Eh")
PY
      triples_terms "$OUT/c4h4_resident_triples.json" ;;
    w6t) water 6; ccsd w6_fc_resident_triples 120 "$OUT/w6.xyz" "${cd_fc[@]}" --device cuda --triples
      triples_terms "$OUT/w6_fc_resident_triples.json" ;;
    w8host) water 8; ccsd w8_fc_host_operands 80 "$OUT/w8.xyz" "${cd_fc[@]}" "${short[@]}" --device cuda --resident off ;;
    ladder)
      for db in "cuda torch" "cpu cublas"; do
        set -- $db
        REPS=2 timeout 40 batching_ladder 12 140 500 "$1" "$2" > "$OUT/ladder_$1_$2.txt" 2>&1
        log "ladder $1/$2 rc=$?"; cat "$OUT/ladder_$1_$2.txt" >> "$OUT/summary.txt"
      done ;;
    tests)
      timeout 40 test_batching --gtest_filter='StagedGemm*:PeakMemory*:CudaRuntime*' > "$OUT/tests_batching.txt" 2>&1
      log "batching tests rc=$? ($(tail -1 "$OUT/tests_batching.txt"))"
      grep -E "^\[  (FAILED|SKIPPED) " "$OUT/tests_batching.txt" | tee -a "$OUT/summary.txt"
      timeout 20 test_ccsd --gtest_filter='Triples*' > "$OUT/tests_ccsd.txt" 2>&1
      log "ccsd (T) kernel tests rc=$? ($(tail -1 "$OUT/tests_ccsd.txt"))"
      grep -E "^\[  (FAILED|SKIPPED) " "$OUT/tests_ccsd.txt" | tee -a "$OUT/summary.txt" ;;
    w6) water 6
      ccsd w6_fc_resident 50 "$OUT/w6.xyz" "${cd_fc[@]}" "${short[@]}" --device cuda
      ccsd w6_fc_cublas_staged 50 "$OUT/w6.xyz" "${cd_fc[@]}" "${short[@]}" --backend cublas --memory "$STAGED_MEMORY" ;;
    cpu16) water 8; ITERS_CPU=2
      ccsd w8_fc_cpu16 150 "$OUT/w8.xyz" "${cd_fc[@]}" --max-iterations "$ITERS_CPU" --allow-unconverged ;;
    *) log "unknown stage $stage" ;;
  esac
  log "stage $stage took $((SECONDS - t0)) s"
done
log "done"
