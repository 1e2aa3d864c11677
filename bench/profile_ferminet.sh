#!/bin/sh
# `nnvmc profile` on the FermiNet CPU preset (configs/runs/lih_ferminet.yaml: 3 layers of
# [48, 12], 8 determinants) over LiH, CH4, C2H6, C4H4 with the forward Laplacian, and with the
# jvp Laplacian over the molecules it can do in minutes; one thread each, WALKERS walkers.
#   sh bench/profile_ferminet.sh [BUILD] [OUT]      (WALKERS, ITER, PROFILED, JVP_MOLECULES)
set -eu
BUILD=${1:-build}
OUT=${2:-runs/bench_profile}
WALKERS=${WALKERS:-32}
ITER=${ITER:-5}
PROFILED=${PROFILED:-3}
JVP_MOLECULES=${JVP_MOLECULES:-lih,ch4,c2h6}
NNVMC=$BUILD/src/app/nnvmc
export OMP_NUM_THREADS=1
uptime
$NNVMC profile configs/runs/lih_ferminet.yaml --molecules lih,ch4,c2h6,c4h4 --warmup 2 --iterations "$ITER" \
  --profile-iterations "$PROFILED" --output "$OUT/forward" sampler.walkers="$WALKERS" run.threads=1
uptime
$NNVMC profile configs/runs/lih_ferminet.yaml --molecules "$JVP_MOLECULES" --warmup 2 --iterations "$ITER" \
  --profile-iterations "$PROFILED" --output "$OUT/jvp" --no-roofline sampler.walkers="$WALKERS" run.threads=1 \
  hamiltonian.laplacian=jvp
uptime
