#!/bin/sh
# Forward Laplacian vs jvp for the Psiformer on CH4 and C4H4: median seconds per local-energy
# evaluation of all walkers and peak working memory (bench_laplacian, one process per model so
# both methods run on the same walkers and parameters), for the CPU preset
# (configs/runs/lih_psiformer.yaml), FermiNet's CPU preset for comparison, and the published
# Psiformer size. jvp is timed on its first chunks only (--timed-walkers) and scaled to all
# walkers. One thread. usage: sh bench/psiformer_laplacian.sh BUILD_DIR
set -eu
BENCH="${1:?build dir}/bench/bench_laplacian"
paper="model.psiformer.layers=4 model.psiformer.head_dim=64 model.psiformer.mlp_hidden_dims=[256] model.psiformer.determinants=16"
run() { OMP_NUM_THREADS=1 "$BENCH" --methods jvp,forward --threads 1 --repeats 3 "$@" 2>&1 | grep -v ' info '; }
echo "## Psiformer CPU preset (3 layers, 4 heads x 8, MLP [32], 8 determinants)"
run --molecules ch4,c4h4 --model-from configs/runs/lih_psiformer.yaml --walkers 256 --timed-walkers 32 --budget 4GiB
echo "## FermiNet CPU preset (3 layers [48, 12], 8 determinants), same walkers"
run --molecules ch4,c4h4 --model-from configs/runs/lih_ferminet_spring.yaml --walkers 256 --timed-walkers 32 --budget 4GiB
echo "## Psiformer at the published size (4 layers, 4 heads x 64, MLP [256], 16 determinants)"
run --molecules ch4 --model-from configs/runs/lih_psiformer.yaml --set "$paper" --walkers 32 --timed-walkers 8 --budget 6GiB
run --molecules c4h4 --model-from configs/runs/lih_psiformer.yaml --set "$paper" --walkers 8 --timed-walkers 2 --budget 6GiB
