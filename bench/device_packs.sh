#!/usr/bin/env bash
# Builds the two packs a session lent the H200 carries, one per prepared device script, with
# ../shared/tools/device/pack.sh (build-device/, torch 2.11, sm_90):
#   .device-vmc   nnvmc psgrad_bench op_count_bench bench_walker_random bench_device_collectives
#                 bench_laplacian + the CUDA-graph plugin     -> bench/gpu_vmc_check.sh
#   .device-ccsd  nnvmc test_batching test_ccsd batching_ladder -> bench/ccsd_gpu_figures.sh
# One pack of all of them no longer fits: 64.0 MiB of binaries on 2026-12-04, and a call carries
# at most 64 MiB with the working tree (3.6 MB tracked). Each folder is git-ignored (only the one
# a call names in `carry` travels) and is checked against the limit here.
# Then, on the device (each call its own pack):
#   run(command="DEVICE_DIR=.device-vmc bash bench/gpu_vmc_check.sh", carry=[".device-vmc"], timeout_s=560)
#   run(command="bash .device-ccsd/run.sh bash bench/ccsd_gpu_figures.sh", carry=[".device-ccsd"], timeout_s=560)
# usage: bench/device_packs.sh [vmc|ccsd ...]   (default both; about 40 min on 2 cores from scratch)
set -euo pipefail
root=$(git rev-parse --show-toplevel); cd "$root"
pack=$root/../shared/tools/device/pack.sh
[ -x "$pack" ] || [ -f "$pack" ] || { echo "no $pack"; exit 2; }
limit=$((64 * 1024 * 1024))
tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)  # travels with every call
sets=("$@"); [ ${#sets[@]} -gt 0 ] || sets=(vmc ccsd)
status=0
for set in "${sets[@]}"; do
  case $set in
    vmc) targets=(nnvmc psgrad_bench op_count_bench bench_walker_random bench_device_collectives bench_laplacian nnvmc_cuda_graph) ;;
    ccsd) targets=(nnvmc test_batching test_ccsd batching_ladder) ;;
    *) echo "unknown pack '$set' (vmc or ccsd)"; exit 2 ;;
  esac
  dir=.device-$set
  bash "$pack" "${targets[@]}"
  rm -rf "$dir"; mv .device "$dir"
  grep -qxF "/$dir/" .git/info/exclude || echo "/$dir/" >> .git/info/exclude
  if [ "$set" = vmc ]; then  # run.cuda_graphs loads this plugin from NNVMC_PLUGIN_DIR
    mkdir -p "$dir/plugins" && cp "${BUILD:-build-device}/src/app/libnnvmc_cuda_graph.so" "$dir/plugins/"
  fi
  size=$(du -sb "$dir" | cut -f1)
  verdict=fits; [ $((size + tree)) -lt $limit ] || { verdict="DOES NOT FIT"; status=1; }
  awk -v d="$dir" -v s="$size" -v t="$tree" -v v="$verdict" \
    'BEGIN { printf "%s: %.1f MiB + working tree %.1f MiB of the 64 MiB a call carries: %s\n", d, s / 1048576, t / 1048576, v }'
done
exit $status
