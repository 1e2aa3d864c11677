#!/bin/sh
# Orbformer transfer (issue 14 part B): one Orbformer trained jointly on five LiH bond lengths
# (configs/runs/lih_orbformer_transfer.yaml: R = 2.6, 2.8, 3.2, 3.4, 3.6 bohr) for JOINT_MINUTES,
# then, side by side with one thread each, fine-tuned on the unseen R = 3.015 bohr
# (configs/runs/lih_orbformer.yaml + model.init_from, no HF pretraining) and trained from scratch
# on it (the same preset with its HF pretraining, which counts against its minutes). The
# checkpoint of each run is copied at the time marks (seconds since the run started), both are
# stopped with SIGINT at the last mark, and every snapshot is evaluated with fixed parameters on
# R = 3.015. A run still in HF pretraining at a mark has no checkpoint there (SIGINT takes effect
# from the first VMC iteration on): that mark is reported as "no checkpoint yet", and one whose
# run had already ended without a checkpoint as "failed (see NAME.log)". "0 minutes": the
# jointly trained weights evaluated on R = 3.015 (fine-tune) and the pretrained-only starting
# point (scratch, a separate run with optim.iterations=0).
#
# usage: bench/orbformer_transfer.sh BUILD_DIR OUT_DIR
# environment: JOINT_MINUTES (default 25; or JOINT_SECONDS), MARKS (seconds, default "60 180 600"),
#              EVAL_STEPS (default 200), EVAL_WALKERS (default 256), E_REF (default -8.070548),
#              EXTRA (overrides for every training run, e.g. for a quick trial of the script;
#              not pretrain.steps, which the fine-tune sets to 0)
# output: OUT_DIR/{joint,finetune,scratch,scratch.start}/ runs, *.eval.json, transfer.tsv
set -eu
BIN=${1:?build dir}/src/app/nnvmc
OUT=${2:?output dir}
JOINT_SECONDS=${JOINT_SECONDS:-$(( ${JOINT_MINUTES:-25} * 60 ))}
EXTRA=${EXTRA:-}
MARKS=${MARKS:-"60 180 600"}
EVAL_STEPS=${EVAL_STEPS:-200}
EVAL_WALKERS=${EVAL_WALKERS:-256}
E_REF=${E_REF:--8.070548}
export OMP_NUM_THREADS=1
LAST=0
for m in $MARKS; do LAST=$m; done
case " $EXTRA" in *" pretrain.steps="*)
  echo "EXTRA: pretrain.steps is set by the script (0 for the fine-tune); leave it out" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
base="run.threads=1 eval.steps=0 --force $EXTRA"  # nnvmc refuses a key given twice
common="optim.iterations=1000000 $base"
echo "start: $(date) $(uptime)" > "$OUT/load.txt"

# 1. Joint training on the five bond lengths, stopped (checkpoint) after JOINT_MINUTES.
# Earlier runs in OUT go first: a start that ends before its first checkpoint puts the run it
# replaced (--force) back, whose checkpoint would pass for this one's.
rm -rf "$OUT/joint" "$OUT/scratch.start" "$OUT/finetune" "$OUT/scratch" "$OUT"/*.h5 "$OUT"/*.status "$OUT"/*.eval.json
"$BIN" train configs/runs/lih_orbformer_transfer.yaml run.output="$OUT/joint" $common run.checkpoint_every=5 \
  > "$OUT/joint.log" 2>&1 &
pid=$!
sleep "$JOINT_SECONDS"
kill -INT "$pid" 2>/dev/null || true
wait "$pid" || true
[ -f "$OUT/joint/checkpoint.h5" ] ||
  { echo "the joint training left no checkpoint (a budget shorter than its pretraining?), see $OUT/joint.log" >&2; exit 1; }
echo "joint done: $(date) $(uptime)" >> "$OUT/load.txt"

# 2. Scratch's starting point (HF pretraining only), then fine-tune and scratch side by side.
"$BIN" train configs/runs/lih_orbformer.yaml run.output="$OUT/scratch.start" $base optim.iterations=0 \
  > "$OUT/scratch.start.log" 2>&1
race() {  # name overrides...
  name=$1
  shift
  dir="$OUT/$name"
  "$BIN" train configs/runs/lih_orbformer.yaml run.output="$dir" $common run.checkpoint_every=2 "$@" \
    > "$OUT/$name.log" 2>&1 &
  rpid=$!
  start=$(date +%s)
  for m in $MARKS; do
    while [ $(( $(date +%s) - start )) -lt "$m" ]; do sleep 1; done
    # No checkpoint yet: a run still going is in HF pretraining or its first iterations; one
    # that has ended without one failed (its log says why).
    had=0
    rm -f "$OUT/$name.$m.status"
    if [ -f "$dir/checkpoint.h5" ]; then had=1
    elif kill -0 "$rpid" 2>/dev/null; then echo "no checkpoint yet" > "$OUT/$name.$m.status"
    else echo "failed (see $name.log)" > "$OUT/$name.$m.status"; fi
    if [ "$m" = "$LAST" ]; then
      kill -INT "$rpid" 2>/dev/null || true
      wait "$rpid" || true
    fi
    if [ "$had" = 1 ]; then
      cp "$dir/checkpoint.h5" "$OUT/$name.$m.h5"
    else
      echo "$name: at $m s: $(cat "$OUT/$name.$m.status")" >> "$OUT/load.txt"
    fi
  done
}
race finetune model.init_from="$OUT/joint/checkpoint.h5" pretrain.steps=0 &
race scratch &
wait
echo "race done: $(date) $(uptime)" >> "$OUT/load.txt"

# 3. Every snapshot evaluated on R = 3.015 bohr (system.molecule=lih), two at a time.
evaluate() {  # name mark checkpoint (none: the run was still pretraining at that mark)
  [ -f "$3" ] || return 0
  "$BIN" eval "$3" system.molecule=lih run.threads=1 --steps "$EVAL_STEPS" --walkers "$EVAL_WALKERS" --seed 1 --json \
    --log-level warn > "$OUT/$1.$2.eval.json" 2> "$OUT/$1.$2.eval.log" || true
}
evaluate finetune 0 "$OUT/joint/checkpoint.h5" &
evaluate scratch 0 "$OUT/scratch.start/checkpoint.h5"
wait
for m in $MARKS; do
  evaluate finetune "$m" "$OUT/finetune.$m.h5" &
  evaluate scratch "$m" "$OUT/scratch.$m.h5"
  wait
done
echo "evaluations done: $(date) $(uptime)" >> "$OUT/load.txt"

python3 - "$OUT" "$E_REF" "$MARKS" > "$OUT/transfer.tsv" <<'PY'
import json, sys, h5py, math
out, eref, marks = sys.argv[1], float(sys.argv[2]), [0] + [int(m) for m in sys.argv[3].split()]
print("run\tminutes\titerations\tenergy\terror\tgap_mEh")
for name in ("finetune", "scratch"):
    for m in marks:
        ckpt = {("finetune", 0): f"{out}/joint/checkpoint.h5", ("scratch", 0): f"{out}/scratch.start/checkpoint.h5"}.get(
            (name, m), f"{out}/{name}.{m}.h5")
        try:
            with h5py.File(ckpt, "r") as f:
                it = int(f["iteration"][()]) if m else 0
        except OSError:
            try:
                state = open(f"{out}/{name}.{m}.status").read().strip()
            except OSError:
                state = "no checkpoint"
            print(f"{name}\t{m / 60:g}\t{state}\t-\t-\t-")
            continue
        try:
            j = json.load(open(f"{out}/{name}.{m}.eval.json"))
        except (OSError, ValueError):
            print(f"{name}\t{m / 60:g}\t{it}\teval failed\t-\t-")
            continue
        print(f"{name}\t{m / 60:g}\t{it}\t{j['energy']:.6f}\t{j['energy_err']:.6f}\t{1000 * (j['energy'] - eref):.1f}")
with h5py.File(f"{out}/joint/result.h5", "r") as f:
    n = len(f["train/energy"])
    print(f"# joint training: {n} iterations; last-20-iteration mean energy per molecule:")
    for k in sorted(f["train"].keys()):
        if isinstance(f["train"][k], h5py.Group):
            e = [x for x in f[f"train/{k}/energy"][-20:] if not math.isnan(x)]
            print(f"#   {k}\t{sum(e) / len(e):.4f}")
PY
cat "$OUT/load.txt" "$OUT/transfer.tsv"
