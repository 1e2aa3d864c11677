#!/usr/bin/env bash
# VMC training on a CUDA device (issue 16), prepared for a session that is lent the H200 machine.
# Build and pack HERE (the device has no -dev packages and no network), then run there:
#   bench/device_packs.sh vmc      (.device-vmc: nnvmc psgrad_bench op_count_bench
#     bench_walker_random bench_device_collectives bench_laplacian and the CUDA-graph plugin;
#     the CCSD script has its own pack: one of both no longer fits the 64 MiB a call carries)
#   run(command="DEVICE_DIR=.device-vmc bash bench/gpu_vmc_check.sh", carry=[".device-vmc"], timeout_s=560)
# Stages (each with its own time limit, results under $OUT, one line each in $OUT/summary.txt):
#   1. per-sample gradients and optimizer steps on CUDA (psgrad_bench: Jacobian / batch gradient,
#      SPRING step vs its FLOP count, K-FAC step), LiH preset at 4096 walkers, float64 and float32;
#   2. training iterations, forward Laplacian, s/iteration per stage from the trainer's timers:
#      LiH at 4096 walkers with SPRING and K-FAC in float64 and float32; CH4 and C4H4 with SPRING
#      at 1024 and 4096 walkers in float64 and at 4096 in float32;
#   2a. the rest of a user's path on CUDA once: pretraining, Adam/SR/minSR, checkpoint, resume, eval;
#   2b. the MH step as a CUDA graph (run.cuda_graphs) against launching its kernels: sampling
#      s/iteration and the energies of the same seed (the same chain, so they should agree);
#   2c. the same for C4H4 (28 electrons: graphs there need cuSOLVER's batched LU, stage lu);
#   2s. it/s with stage times from device events against a device wait at each stage boundary;
#   3. the 16-core CPU of the same machine on LiH at 4096 walkers for the GPU/CPU ratio, and
#      its thread scaling at 512 walkers with and without walker parts (run.walker_threads);
#   4. `nnvmc profile` on CUDA and one short CUDA training run of Psiformer, PauliNet, Orbformer;
#   4b. the PauliNet and Orbformer Jacobians on CUDA (time, exactness against the vmapped method);
#   5. the counter-based walker streams on CUDA: time per MH step, same bits as the CPU;
#   6. NCCL device collectives (one rank), the functorch jvp and the Hutchinson Laplacian on CUDA.
#   lu. batched LU per libtorch backend (python3 bench/lu_backends.py): time, graph capture.
# They run in priority order, STAGES (default "lu 1 2 2c 4 2s 3 2a 2b 6 4b 5"); each logs how long it took.
# Rehearse on the CPU first: bench/device_dry_run.sh bench/gpu_vmc_check.sh (about 2 minutes).
# Goals (issue 16): LiH 4096 walkers <= 0.15 s/it, C4H4 4096 <= 1 s/it, GPU >= 10x the 16 cores.
set -u
OUT=${OUT:-gpu_out}
mkdir -p "$OUT"
DEVICE_DIR=${DEVICE_DIR:-.device}  # the pack (bench/device_packs.sh vmc: .device-vmc)
R=${DEVICE_RUN:-$DEVICE_DIR/run.sh}  # bench/device_dry_run.sh points it at its CPU stand-in
export NNVMC_PLUGIN_DIR="$PWD/$DEVICE_DIR/plugins"  # libnnvmc_cuda_graph.so (run.cuda_graphs)
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
[ -f "$R" ] || { log "no $DEVICE_DIR/ (run bench/device_packs.sh vmc here first)"; exit 1; }
bash "$R" nvidia-smi --query-gpu=name,memory.total --format=csv,noheader > "$OUT/env.txt" 2>&1
log "env: $(head -1 "$OUT/env.txt")"

# One training run, its per-stage s/iteration in the summary (pretraining off, short burn-in, no
# evaluation; overrides after `limit` replace these defaults: nnvmc refuses a key given twice).
train() {  # tag config walkers dtype optimizer device threads limit [overrides...]
  local tag=$1 cfg=$2 w=$3 dt=$4 opt=$5 dev=$6 th=$7 lim=$8
  shift 8
  local defaults=() d a given
  for d in optim.type="$opt" sampler.walkers="$w" run.dtype="$dt" run.device="$dev" run.threads="$th" \
    pretrain.steps=0 sampler.burn_in=10 optim.iterations=12 eval.steps=0 run.checkpoint_every=0 \
    run.output="$OUT/run_$tag"; do
    given=0
    for a in "$@"; do [ "${a%%=*}" = "${d%%=*}" ] && given=1; done
    [ $given = 1 ] || defaults+=("$d")
  done
  timeout "$lim" bash "$R" nnvmc train "$cfg" "${defaults[@]}" "$@" > "$OUT/train_$tag.log" 2>&1
  local rc=$?
  log "train $tag rc=$rc: $(grep -E ' info   (sampling|local_energy|gradient|optimizer) ' "$OUT/train_$tag.log" \
    | awk '{printf "%s %.3f s/it  ", $3, $4 / 12}')"
}

# 1. Jacobian and optimizer steps on the device.
stage_1() {
  for dt in float64 float32; do
    timeout 90 bash "$R" psgrad_bench --walkers 4096 --repeats 3 --old 0 --threads 16 run.device=cuda run.dtype=$dt \
      > "$OUT/psgrad_$dt.txt" 2>&1
    log "psgrad_bench lih 4096 $dt rc=$?"; tail -4 "$OUT/psgrad_$dt.txt" >> "$OUT/summary.txt"
  done
}

# 2. Training iterations per stage (pretraining off, short burn-in, no evaluation).
stage_2() {
  for dt in float64 float32; do
    for opt in spring kfac; do
      train "lih_4096_${opt}_$dt" configs/runs/lih_ferminet_spring.yaml 4096 $dt $opt cuda 1 60
    done
  done
  # CH4 and C4H4 (the issue's C4H4 goal: 4096 walkers <= 1 s/it), SPRING, float64 at 1024 and
  # 4096 walkers and float32 at 4096
  for m in ch4 c4h4; do
    [ -f configs/molecules/$m.yaml ] || continue
    for run in "1024 float64" "4096 float64" "4096 float32"; do
      set -- $run
      train "${m}_$1_spring_$2" configs/runs/lih_ferminet_spring.yaml $1 $2 spring cuda 1 120 system.molecule=$m
    done
  done
}

# 2a. The rest of a user's path on CUDA, once each (everything else above skips it): HF
#     pretraining, Adam, SR and minSR steps, a checkpoint, a resumed run, the evaluation at the
#     end of training and `nnvmc eval` of the checkpoint.
stage_2a() {
  train "lih_512_adam_user_path" configs/runs/lih_ferminet_spring.yaml 512 float64 adam cuda 1 90 \
    pretrain.steps=20 eval.steps=20 run.checkpoint_every=5
  log "(its local_energy and sampling s/it also count the 20 evaluation steps; pretraining has its own timers)"
  grep -hE "pretrain +20/20|^energy |error" "$OUT/train_lih_512_adam_user_path.log" | head -3 >> "$OUT/summary.txt"
  timeout 60 bash "$R" nnvmc train --resume "$OUT/run_lih_512_adam_user_path" optim.iterations=16 \
    > "$OUT/resume_user_path.log" 2>&1
  log "resume on cuda rc=$?: $(grep -h ' info it ' "$OUT/resume_user_path.log" | tail -1)"
  timeout 60 bash "$R" nnvmc eval "$OUT/run_lih_512_adam_user_path/checkpoint.h5" --steps 20 --walkers 1024 --json \
    > "$OUT/eval_user_path.json" 2> "$OUT/eval_user_path.err"
  log "nnvmc eval on cuda rc=$?: $(head -c 300 "$OUT/eval_user_path.json")"
  # (minSR names its device with an index, as a multi-GPU user would)
  train "lih_512_sr" configs/runs/lih_ferminet_spring.yaml 512 float64 sr cuda 1 45
  train "lih_512_minsr_cuda0" configs/runs/lih_ferminet_spring.yaml 512 float64 minsr cuda:0 1 45
}

# 2b. CUDA graphs of the MH step and the local energy, K-FAC LiH at 512 and 4096 walkers and
#     Psiformer/PauliNet/Orbformer at 1024. "captured ... as a CUDA graph" lines show that graphs ran
#     (without them, graphs off/on compares eager with eager).
stage_2b() {
  for w in 512 4096; do
    for g in false true; do
      train "lih_${w}_kfac_graphs_$g" configs/runs/lih_ferminet_kfac.yaml $w float64 kfac cuda 1 60 run.cuda_graphs=$g
    done
    grep -h "CUDA graph" "$OUT"/train_lih_${w}_kfac_graphs_true.log | head -2 >> "$OUT/summary.txt"
    log "energies same seed, graphs off/on: $(grep -h ' info it ' "$OUT"/train_lih_${w}_kfac_graphs_false.log | tail -1) | \
  $(grep -h ' info it ' "$OUT"/train_lih_${w}_kfac_graphs_true.log | tail -1)"
  done
  # The graph pool is left out of run.memory_budget (batching/held_memory.hpp): with a budget that
  # binds, the local energy fits half of it and the pool reported at capture must fit beside the
  # gradient stage (its chunk line follows).
  train "lih_4096_spring_graphs_budget" configs/runs/lih_ferminet_spring.yaml 4096 float64 spring cuda 1 60 \
    run.cuda_graphs=true run.memory_budget=1GiB
  grep -hE "graph pool holds|local energy:|per-sample gradients:|too small for one|error:" "$OUT/train_lih_4096_spring_graphs_budget.log" \
    | head -5 >> "$OUT/summary.txt"
  for a in psiformer paulinet orbformer; do
    train "lih_1024_${a}_graphs" "configs/runs/lih_$a.yaml" 1024 float64 spring cuda 1 60 run.cuda_graphs=true
    grep -h "CUDA graph" "$OUT/train_lih_1024_${a}_graphs.log" | head -2 >> "$OUT/summary.txt"
  done
}

# 2c. C4H4 with CUDA graphs (28 electrons: its 28 x 28 determinants took libtorch's MAGMA path, which
#     cannot be captured, before nnvmc asked for cuSOLVER): both graphs must be captured; off/on.
stage_2c() {
  for g in false true; do
    train "c4h4_1024_kfac_graphs_$g" configs/runs/lih_ferminet_kfac.yaml 1024 float64 kfac cuda 1 90 \
      system.molecule=c4h4 run.cuda_graphs=$g
  done
  grep -hE "CUDA graph|cuSOLVER" "$OUT/train_c4h4_1024_kfac_graphs_true.log" | head -3 >> "$OUT/summary.txt"
}

# 2s. Stage times from device events (the trainer since 2026-12-05) against a device wait at every
#     stage boundary (before; NNVMC_STAGE_SYNC=1): it/s of the same LiH run, interleaved, twice.
stage_2s() {
  local rep sync tag
  for rep in 1 2; do
    for sync in 0 1; do
      tag="lih_4096_kfac_stagesync${sync}_$rep"
      export NNVMC_STAGE_SYNC=$sync
      train "$tag" configs/runs/lih_ferminet_kfac.yaml 4096 float64 kfac cuda 1 60
      unset NNVMC_STAGE_SYNC
      log "  stage waits $sync: $(grep -oE '[0-9.]+ it/s' "$OUT/train_$tag.log" | tail -1)"
    done
  done
}

# 3. The 16 CPU cores of the same machine on LiH at 4096 walkers (GPU/CPU ratio), and their thread
#    scaling at 512 walkers.
stage_3() {
  train "lih_4096_spring_cpu16" configs/runs/lih_ferminet_spring.yaml 4096 float64 spring cpu 16 150
  # 3b. Thread scaling of the 16 cores at 512 walkers (issue 16: 2.4x over one core before): one
  #     thread, then 16 with walker parts (the default) and with libtorch's intra-op threads only.
  train "lih_512_spring_cpu1" configs/runs/lih_ferminet_spring.yaml 512 float64 spring cpu 1 60
  train "lih_512_spring_cpu16_parts" configs/runs/lih_ferminet_spring.yaml 512 float64 spring cpu 16 30
  train "lih_512_spring_cpu16_intraop" configs/runs/lih_ferminet_spring.yaml 512 float64 spring cpu 16 30 \
    run.walker_threads=false
}

# 4. `nnvmc profile` on CUDA (issue 15: stage times from CUDA events, kernel mix from the
#    profiler's CUDA activities) and the four ansätze's first CUDA iterations (issues 12-14).
stage_4() {
  timeout 120 bash "$R" nnvmc profile configs/runs/lih_psiformer.yaml --molecules lih,ch4 --warmup 2 --iterations 3 \
    --profile-iterations 2 --output "$OUT/profile_psiformer_cuda" sampler.walkers=1024 run.device=cuda \
    > "$OUT/profile_cuda.log" 2>&1
  log "profile psiformer cuda rc=$?"; grep -E "iteration|cover" "$OUT/profile_cuda.log" | tail -4 >> "$OUT/summary.txt"
  grep -o '"stage_clock": "[^"]*"' "$OUT/profile_psiformer_cuda/profile.json" >> "$OUT/summary.txt" 2>/dev/null  # "cuda events"
  for a in psiformer paulinet orbformer; do
    train "lih_1024_${a}" "configs/runs/lih_$a.yaml" 1024 float64 spring cuda 1 60
  done
}

# 4b. Their Jacobians on CUDA (one recorded pass; parameter-derived tensors such as Orbformer's
#     generated orbitals pulled back in one functorch-batched backward): time against a batch
#     gradient, and exactness against the vmapped method (--old 1).
stage_4b() {
  for a in paulinet orbformer; do
    timeout 60 bash "$R" psgrad_bench --config "configs/runs/lih_$a.yaml" --walkers 1024 --repeats 3 --old 1 \
      run.device=cuda pretrain.steps=0 > "$OUT/psgrad_$a.txt" 2>&1
    log "psgrad_bench $a 1024 cuda rc=$?"; grep -iE "jac|exact" "$OUT/psgrad_$a.txt" | tail -4 >> "$OUT/summary.txt"
  done
}

# 5. Walker streams on the device (the sampler's and Hutchinson's random numbers).
stage_5() {
  timeout 60 bash "$R" bench_walker_random --walkers 4096 --repeats 50 --device cuda > "$OUT/walker_random.txt" 2>&1
  log "walker streams cuda rc=$?"; tail -2 "$OUT/walker_random.txt" >> "$OUT/summary.txt"
}

# 6. NCCL device collectives (issue 19), one rank (one GPU here): results of all-reduce,
#    broadcast and uneven all-gather against their definitions, all-reduce time per size; and the
#    jvp Laplacian's functorch transforms on CUDA (issue 16) against the reverse method, and the
#    Hutchinson estimator on CUDA (its probes come from the walker streams).
stage_6() {
  timeout 60 bash "$R" bench_device_collectives --max-mib 64 > "$OUT/device_collectives.txt" 2>&1
  log "nccl collectives rc=$?"; head -1 "$OUT/device_collectives.txt" >> "$OUT/summary.txt"
  timeout 90 bash "$R" bench_laplacian --model-from configs/runs/lih_ferminet_kfac.yaml --walkers 1024 \
    --methods jvp,reverse,forward,hutchinson --device cuda > "$OUT/laplacian_cuda.txt" 2>&1
  log "jvp/reverse/forward/hutchinson cuda rc=$?"; grep -E "^lih" "$OUT/laplacian_cuda.txt" >> "$OUT/summary.txt"
}

# lu. Batched LU (every log-determinant) per libtorch backend: time, CUDA-graph capture, agreement.
#     nnvmc prefers cuSOLVER/cuBLAS on CUDA because the default's MAGMA path (more than 16 matrices
#     larger than 16 x 16) syncs the device and cannot be captured (bench/lu_backends.py).
stage_lu() {
  timeout 45 python3 bench/lu_backends.py > "$OUT/lu_backends.txt" 2>&1
  log "lu backends rc=$?"; cat "$OUT/lu_backends.txt" >> "$OUT/summary.txt"
}

# Priority order: if the run's time limit cuts the script, what is cut is the least needed. A second
# call can run the rest, e.g. STAGES="4b 5" (the machine stays warm for a while between calls).
for stage in ${STAGES:-lu 1 2 2c 4 2s 3 2a 2b 6 4b 5}; do
  declare -F "stage_$stage" > /dev/null || { log "unknown stage '$stage' (STAGES)"; continue; }
  start=$(date +%s)
  "stage_$stage"
  log "stage $stage took $(( $(date +%s) - start )) s"
done
log "done"
