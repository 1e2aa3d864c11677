#!/bin/sh
# Issue-3 table: time and working memory per local-energy evaluation, FermiNet default width
# ([[256,32]]x4, 16 determinants), 256 walkers, LiH/CH4/C2H6/C4H4, float64 and float32, one
# thread. Chunks come from a 4 GiB budget (run.memory_budget). LiH and CH4 time all 256
# walkers; C2H6 and C4H4 time the first TIMED walkers (whole chunks) and scale to 256 (jvp
# would take ~15-40 min per evaluation here), which bench_laplacian marks in its 'timed' column.
# usage: bench/laplacian_table.sh BUILD_DIR [TIMED]
set -eu
B=${1:?build dir}/bench/bench_laplacian; TIMED=${2:-32}
for dt in float64 float32; do
  "$B" --molecules lih,ch4 --walkers 256 --dtype $dt --threads 1 --repeats 3 --budget 4GiB \
       --methods jvp,reverse,hutchinson,forward
  "$B" --molecules c2h6,c4h4 --walkers 256 --dtype $dt --threads 1 --repeats 1 --budget 4GiB \
       --timed-walkers "$TIMED" --methods jvp,reverse,hutchinson,forward
done
