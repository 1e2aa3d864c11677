#!/usr/bin/env bash
# Per-sample Jacobian ("gradient" stage) and iteration time of the SPRING presets, two nnvmc
# builds side by side (interleaved, one thread, pinned, medians of `nnvmc profile`):
#   bench/jacobian_presets.sh OLD_NNVMC NEW_NNVMC [walkers=256] [repeats=3]
# OLD runs as the presets shipped before (optim.sr.chunk_walkers=16) and with one pass
# (chunk_walkers=0); NEW runs the presets as shipped. Prints one line per run:
#   preset variant gradient_s iteration_s gradient_ops
set -euo pipefail
old=$1 new=$2 walkers=${3:-256} repeats=${4:-3}
out=$(mktemp -d)
row() {  # preset variant binary overrides...
  local preset=$1 variant=$2 bin=$3; shift 3
  rm -rf "$out/p"
  OMP_NUM_THREADS=1 taskset -c 1 "$bin" profile "configs/runs/$preset.yaml" --iterations 5 --warmup 2 --profile-iterations 1 \
    --no-roofline --no-plots --output "$out/p" sampler.walkers="$walkers" run.threads=1 pretrain.steps=0 sampler.burn_in=20 "$@" >/dev/null 2>&1
  python3 - "$out/p/report.md" "$preset" "$variant" <<'PY'
import sys, re
rows = [l for l in open(sys.argv[1]) if l.startswith('| lih |')]
t = [c.strip() for c in rows[0].split('|')]                  # stage times row
ops = [r for r in rows if '| gradient |' in r][0].split('|')  # operator mix row of the gradient stage
print(f"{sys.argv[2]:16s} {sys.argv[3]:14s} gradient {float(t[9].split()[0]):.4f} s  iteration {float(t[4]):.4f} s  gradient ops {ops[9].strip()}")
PY
}
for rep in $(seq "$repeats"); do
  for p in lih_psiformer lih_paulinet lih_orbformer; do
    row $p old_chunk16 "$old" optim.sr.chunk_walkers=16
    row $p old_onepass "$old" optim.sr.chunk_walkers=0
    row $p new "$new"
  done
done
rm -rf "$out"
