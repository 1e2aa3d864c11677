#!/bin/sh
# The one prepared GPU check (issues 3 and 5), for a session that is lent a device machine:
#   run(command="sh bench/gpu_check.sh", timeout_s=590)
# Builds the CUDA configuration, runs the tests whose CUDA branch only runs on a GPU (cuBLAS
# staged pipeline, CUDA peak memory, run.device=cuda), the ladder term on the libtorch-CUDA and
# cuBLAS backends, CCSD per-iteration time on C4H4 (and (H2O)4-6 when ../shared is present) on
# CPU / torch-CUDA / cuBLAS, and the local-energy time and measured peak memory on CUDA.
# Everything goes to $OUT (default ./gpu_out); each stage has its own time limit so one slow
# stage cannot eat the others. Nothing here is a test of the suite: the results are numbers
# for the issue notes.
set -u
OUT=${OUT:-gpu_out}
mkdir -p "$OUT"
B=${BUILD:-build-gpu}
J=$(nproc)
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }

{ nvidia-smi; python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; nvcc --version | tail -1; } \
  > "$OUT/env.txt" 2>&1
log "env: $(grep -m1 -o 'H[0-9]*[^|]*' "$OUT/env.txt" | head -1)"

if ! { cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release -DNNVMC_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 &&
       timeout 300 cmake --build "$B" -j "$J" --target test_batching test_train nnvmc batching_ladder bench_laplacian; } \
     > "$OUT/build.txt" 2>&1; then
  log "build failed (tail of $OUT/build.txt):"; tail -30 "$OUT/build.txt" | tee -a "$OUT/summary.txt"; exit 1
fi
log "build ok"

# Tests with a CUDA branch (on a GPU they exercise cuBLAS, the caching-allocator peak, run.device).
timeout 120 "$B/tests/batching/test_batching" --gtest_filter='StagedGemm*:PeakMemory*:SplitEquivalence*' \
  > "$OUT/tests_batching.txt" 2>&1; log "batching tests rc=$? ($(tail -1 "$OUT/tests_batching.txt"))"
timeout 60 "$B/tests/train/test_train" --gtest_filter='Setup*' > "$OUT/tests_train.txt" 2>&1
log "setup test rc=$? ($(tail -1 "$OUT/tests_train.txt"))"

# Ladder term: o v naux chosen for a GPU (operands on the host, 0.3 + 0.2 GB).
for dev_backend in "cuda torch" "cpu cublas"; do
  set -- $dev_backend
  REPS=2 timeout 120 "$B/bench/batching_ladder" 12 140 500 "$1" "$2" > "$OUT/ladder_$1_$2.txt" 2>&1
  log "ladder $1/$2 rc=$?"; cat "$OUT/ladder_$1_$2.txt" >> "$OUT/summary.txt"
done

# CCSD per-iteration time (3 iterations), CPU vs GPU backends.
MOLS="c4h4"
if [ -f ../shared/reference/water_clusters.xyz ]; then
  for n in 4 5 6; do
    python3 - ../shared/reference/water_clusters.xyz "$n" "$OUT/w$n.xyz" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines(); i = k = 0
while i < len(lines):
    m = int(lines[i].split()[0])
    if k + 1 == int(sys.argv[2]): open(sys.argv[3], "w").write("\n".join(lines[i:i + 2 + m]) + "\n"); break
    i += 2 + m; k += 1
PY
    MOLS="$MOLS $OUT/w$n.xyz"
  done
fi
for mol in $MOLS; do
  for opts in "--device cpu" "--device cuda" "--backend cublas"; do
    tag=$(basename "$mol" .xyz)_$(echo "$opts" | tr -d ' -')
    timeout 150 "$B/src/app/nnvmc" ccsd "$mol" --basis cc-pvdz --json --max-iterations 3 --allow-unconverged $opts \
      > "$OUT/ccsd_$tag.json" 2> "$OUT/ccsd_$tag.err"
    log "ccsd $tag rc=$? s/it $(grep -o '"seconds_per_iteration": [0-9.e-]*' "$OUT/ccsd_$tag.json")"
  done
done

# Local energy on CUDA: time and peak memory measured from the caching allocator.
timeout 240 "$B/bench/bench_laplacian" --molecules ch4,c4h4 --walkers 256 --device cuda --budget 16GiB \
  --methods jvp,reverse,hutchinson,forward --repeats 3 > "$OUT/laplacian_cuda.txt" 2>&1
log "laplacian cuda rc=$?"; grep -v '\[info\]' "$OUT/laplacian_cuda.txt" >> "$OUT/summary.txt"
