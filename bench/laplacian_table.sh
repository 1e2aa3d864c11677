#!/bin/sh
# Issue-3 table: time and working memory per local-energy evaluation, FermiNet default width
# ([[256,32]]x4, 16 determinants), 256 walkers, LiH/CH4/C2H6/C4H4, float64 and float32, one
# thread. Chunks come from a 4 GiB budget (run.memory_budget). LiH and CH4 time all 256
# walkers; C2H6 and C4H4 time the first TIMED walkers (whole chunks) and scale to 256, which
# bench_laplacian marks in its 'timed' column; TIMED=0 (the default) times all 256 (jvp then
# takes ~10 min per evaluation on C4H4 here; the whole table ~40 min).
# Ends with the growth exponent of time with electron count per (method, dtype) over the four.
# usage: bench/laplacian_table.sh BUILD_DIR [TIMED]
set -eu
B=${1:?build dir}/bench/bench_laplacian; TIMED=${2:-0}
OUT=$(mktemp)
for dt in float64 float32; do
  "$B" --molecules lih,ch4 --walkers 256 --dtype $dt --threads 1 --repeats 3 --budget 4GiB \
       --methods jvp,reverse,hutchinson,forward | tee -a "$OUT"
  "$B" --molecules c2h6,c4h4 --walkers 256 --dtype $dt --threads 1 --repeats 1 --budget 4GiB \
       --timed-walkers "$TIMED" --methods jvp,reverse,hutchinson,forward | tee -a "$OUT"
done
python3 - "$OUT" <<'PY'
import math, sys
pts = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 13 and f[2].isdigit():
        pts.setdefault((f[1], f[6]), []).append((int(f[2]), float(f[7])))
for (method, dt), p in sorted(pts.items()):
    if len(p) < 2: continue
    xs = [math.log(n) for n, _ in p]; ys = [math.log(t) for _, t in p]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    k = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    print(f"growth {method:<11} {dt}: time ~ N^{k:.2f} over {len(p)} molecules")
PY
rm -f "$OUT"
