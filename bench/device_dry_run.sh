#!/usr/bin/env bash
# Rehearses a prepared device script on this machine's CPU, so that a session lent the GPU does not
# spend its 15 minutes finding a misspelt flag, an unknown config key or a summary grep that
# matches nothing. Every command runs with the script's own flags and keys, except that:
#   - the device is the CPU (run.device=cuda[:N], --device cuda[:N] and a bare `cuda[:N]` become cpu),
#   - walker counts are capped at DRY_WALKERS (default 32) and thread counts at this machine's cores,
#   - for bench/ccsd_gpu_figures.sh the water clusters are (H2O)2, C4H4 is H2O and ITERS=2.
# Binaries come from BUILD (default build) through argument-rewriting shims; `nvidia-smi` is a stub.
# Steps that need CUDA (the cuBLAS backend, NCCL, captured graphs) fail with their own errors:
# that is expected, and shows their error paths are clean. Exit code: the script's.
# usage: bench/device_dry_run.sh bench/gpu_vmc_check.sh      (or bench/ccsd_gpu_figures.sh)
#        results under dry_out/<script name>/ (emptied first), summary in its summary.txt
set -u
script=${1:?usage: bench/device_dry_run.sh bench/<device script>.sh}
[ -f "$script" ] || { echo "no such script: $script"; exit 2; }
script=$(cd "$(dirname "$script")" && pwd)/$(basename "$script")
root=$(cd "$(dirname "$0")/.." && pwd); cd "$root"  # (the source tree, also outside a git work tree)
build=$(cd "${BUILD:-build}" 2>/dev/null && pwd) || { echo "no build directory '${BUILD:-build}' (build first)"; exit 2; }
OUT=$root/dry_out/$(basename "$script" .sh); rm -rf "$OUT"; mkdir -p "$OUT"
shim=$(mktemp -d); trap 'rm -rf "$shim"' EXIT
mkdir -p "$shim/bin"
cat > "$shim/shim" <<SH
#!/usr/bin/env bash
# argument-rewriting stand-in for a device binary (bench/device_dry_run.sh)
name=\$(basename "\$0")
real=\$(find "$build" -type f -perm -u+x -name "\$name" -not -path '*/CMakeFiles/*' | head -1)
[ -n "\$real" ] || { echo "[dry run] \$name is not built in $build"; exit 127; }
cores=\$(nproc); cap=${DRY_WALKERS:-32}
args=(); prev=
for a in "\$@"; do
  case "\$prev:\$a" in
    --walkers:*) [ "\$a" -gt "\$cap" ] && a=\$cap ;;
    --threads:*) [ "\$a" -gt "\$cores" ] && a=\$cores ;;
  esac
  case "\$a" in
    cuda|cuda:[0-9]*) a=cpu ;;
    run.device=cuda|run.device=cuda:[0-9]*) a=run.device=cpu ;;
    sampler.walkers=*) [ "\${a#*=}" -gt "\$cap" ] && a=sampler.walkers=\$cap ;;
    run.threads=*) [ "\${a#*=}" -gt "\$cores" ] && a=run.threads=\$cores ;;
  esac
  args+=("\$a"); prev=\$a
done
exec "\$real" "\${args[@]}"
SH
chmod +x "$shim/shim"
for b in nnvmc psgrad_bench op_count_bench bench_walker_random bench_device_collectives bench_laplacian \
         test_batching test_ccsd batching_ladder; do
  ln -s ../shim "$shim/bin/$b"
done
printf '#!/bin/sh\necho "dry run: no GPU (bench/device_dry_run.sh)"\n' > "$shim/bin/nvidia-smi"
chmod +x "$shim/bin/nvidia-smi"
# the stand-in for .device/run.sh: the shims first on PATH, then the command
printf '#!/usr/bin/env bash\nexport PATH="%s/bin:$PATH"\nexec "$@"\n' "$shim" > "$shim/run.sh"
export OUT DEVICE_RUN="$shim/run.sh" DRY_WATER=${DRY_WATER:-2} DRY_C4H4=${DRY_C4H4:-h2o} ITERS=${ITERS:-2}
start=$(date +%s)
bash "$shim/run.sh" bash "$script"; rc=$?
echo "[dry run] $script rc=$rc in $(( $(date +%s) - start )) s; summary: $OUT/summary.txt"
exit $rc
