#!/usr/bin/env bash
# Fuzzes the config parser (file and overrides) and the molecule YAML/XYZ readers with libFuzzer
# under AddressSanitizer and UndefinedBehaviorSanitizer for a bounded time, then prints the
# number of executions. Needs clang and libclang-rt-dev (Debian: apt-get install clang
# libclang-rt-14-dev). Not part of the test suite.
# usage: bench/fuzz_inputs.sh [SECONDS] [OUT_DIR]     (default 300 s, /tmp/nnvmc_fuzz)
set -euo pipefail
SECONDS_TO_RUN=${1:-300}
OUT=${2:-/tmp/nnvmc_fuzz}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT/corpus" "$OUT/crashes"
# Seeds: every shipped config and molecule, and a few XYZ frames.
cp "$ROOT"/configs/runs/*.yaml "$ROOT"/configs/molecules/*.yaml "$ROOT"/configs/models/*.yaml "$OUT/corpus/"
printf '2\nH2\nH 0 0 0\nH 0 0 0.74\n' > "$OUT/corpus/h2.xyz"
printf '3\nwater\nO 0 0 0.1173\nH 0 0.7572 -0.4692\nH 0 -0.7572 -0.4692\n' > "$OUT/corpus/h2o.xyz"
printf 'sampler.walkers=64\noptim.type=spring\nsystem.molecule=[[H, 0, 0, 0]]\nsystem.spin=1\n' > "$OUT/corpus/overrides"
# Dictionary: every config key, molecule key and element symbol.
{
  grep -ohE 'v\("[a-z_]+"' "$ROOT/src/core/config.hpp" | sed -E 's/v\(("[a-z_]+")/\1/'
  for w in units charge spin atoms bohr angstrom name e_ref H He Li Be C N O F Ne Na Kr Xx \
           .nan .inf true false null "{" "}" "[" "]" ": " "=" "." "&a" "*a" "!!str" "---" "- "; do
    printf '"%s"\n' "$w"
  done
} > "$OUT/dict"
clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I"$ROOT/src" -DNNVMC_SOURCE_DIR_DEFAULT="\"$ROOT\"" \
  "$ROOT/src/core/config.cpp" "$ROOT/src/core/system.cpp" "$ROOT/src/core/elements.cpp" \
  "$ROOT/bench/fuzz/fuzz_inputs.cpp" -lyaml-cpp -o "$OUT/fuzz_inputs"
echo "built $OUT/fuzz_inputs; fuzzing for ${SECONDS_TO_RUN}s (uptime: $(uptime))"
"$OUT/fuzz_inputs" "$OUT/corpus" -dict="$OUT/dict" -max_total_time="$SECONDS_TO_RUN" -max_len=4096 \
  -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$OUT/crashes/" -print_final_stats=1 2>&1 |
  tee "$OUT/fuzz.log" | grep -E '^#[0-9]+ +(DONE|INITED)|stat::|ERROR|SUMMARY|crash|deadly' || true
echo "crash/timeout/leak artifacts: $(ls "$OUT/crashes" | wc -l) in $OUT/crashes"
