# Sourced by the wall-clock comparisons (ngd_runs.sh, kfac_vs_spring.sh): a training run that
# stops after its budget, and the evaluation of its checkpoint, each failing loudly. Needs BIN
# (the nnvmc binary), OUT (the output directory) and COMMON (settings every run takes).
# Each run starts afresh (--force); timeout's exit code 124 is the expected end (the budget ran
# out and the trainer checkpointed at SIGINT). A failed run or evaluation returns 1 naming its
# log, so no earlier result in OUT is reported as this one's.

timed_train() {  # name config seconds
  # (not only --force: a start that ends before its first checkpoint puts the replaced run back,
  # whose checkpoint would then pass for this run's)
  rm -rf "${OUT:?}/$1"
  rc=0
  timeout -s INT "$3" "$BIN" train --force "$2" run.output="$OUT/$1" $COMMON > "$OUT/$1.log" 2>&1 || rc=$?
  [ "$rc" = 0 ] || [ "$rc" = 124 ] || { echo "$1: training failed (exit $rc), see $OUT/$1.log" >&2; return 1; }
  [ -f "$OUT/$1/checkpoint.h5" ] ||
    { echo "$1: no checkpoint (a budget shorter than pretraining?), see $OUT/$1.log" >&2; return 1; }
}

timed_eval() {  # name steps
  rm -f "$OUT/$1.eval.json"
  "$BIN" eval "$OUT/$1/checkpoint.h5" run.threads=1 --steps "$2" --json > "$OUT/$1.eval.json" 2> "$OUT/$1.eval.log" ||
    { echo "$1: evaluation failed, see $OUT/$1.eval.log" >&2; return 1; }
}

# Runs "name config seconds" twice side by side, then returns 1 if either failed.
timed_pair() {  # name1 config1 name2 config2 seconds
  timed_train "$1" "$2" "$5" & p1=$!
  timed_train "$3" "$4" "$5" & p2=$!
  r=0; wait $p1 || r=1; wait $p2 || r=1; return $r
}

# Evaluates two runs side by side, then returns 1 if either failed.
timed_eval_pair() {  # name1 name2 steps
  timed_eval "$1" "$3" & p1=$!
  timed_eval "$2" "$3" & p2=$!
  r=0; wait $p1 || r=1; wait $p2 || r=1; return $r
}
