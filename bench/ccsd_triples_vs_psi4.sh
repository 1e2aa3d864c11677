#!/usr/bin/env bash
# (T) wall seconds, nnvmc vs Psi4 on the same machine, one thread each, runs interleaved
# (nnvmc conventional, Psi4 ccenergy + cctriples, nnvmc Cholesky, Psi4 fnocc CD-CCSD(T);
# repeated REPEATS times):
#   nnvmc: OMP_NUM_THREADS=1 nnvmc ccsd MOL --basis cc-pvdz --triples --json [--cholesky TAU]
#          -> its JSON's seconds_triples (the (T) step alone)
#   Psi4:  bench/psi4_triples.py (ccsd and ccsd(t) runs, (T) = the wall-time difference;
#          OpenBLAS pinned to 1 thread, its core type set where OpenBLAS does not know the CPU)
# MAIN=path/to/another/nnvmc adds its rows (main_conv, main_chol): before/after in one run.
# Prints one row per run and a median line per system with the ratios.
# usage: bench/ccsd_triples_vs_psi4.sh "c4h4 4" [NNVMC] [TAU]
#        env: REPEATS=2 FROZEN=0 MAIN= PROGRAMS="nnvmc_conv psi4_ccenergy nnvmc_chol psi4_fnocc"
set -euo pipefail
source "$(dirname "$0")/ccsd_system.sh"
SYSTEMS=${1:-"c4h4"}; NNVMC=${2:-build/src/app/nnvmc}; TAU=${3:-1e-5}
REPEATS=${REPEATS:-2}; FROZEN=${FROZEN:-0}; MAIN=${MAIN:-}
PROGRAMS=${PROGRAMS:-"nnvmc_conv psi4_ccenergy nnvmc_chol psi4_fnocc"}
if [ -n "$MAIN" ]; then
  [[ " $PROGRAMS " == *" nnvmc_conv "* ]] && PROGRAMS="main_conv $PROGRAMS"
  [[ " $PROGRAMS " == *" nnvmc_chol "* ]] && PROGRAMS="$PROGRAMS main_chol"
fi
XYZ=${XYZ:-bench/molecules/water_clusters.xyz}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
fc=(); [ "$FROZEN" = 1 ] && fc=(--frozen-core)
echo "# $(date -u +%F' '%H:%M) UTC; nnvmc $(git rev-parse --short HEAD 2>/dev/null); $(nproc) cores; tau $TAU; frozen core $FROZEN"
echo "# nnvmc binary: $NNVMC; main binary: ${MAIN:-none}; $(uptime)"
printf "%-8s %-4s %-14s %10s %22s %6s\n" system run program triples_s e_t load
for sys in $SYSTEMS; do
  resolve_system "$sys" "$TMP"
  for r in $(seq 1 "$REPEATS"); do
    for prog in $PROGRAMS; do
      l=$(cut -d' ' -f1 /proc/loadavg)
      extra=(); [[ $prog == *_chol || $prog == psi4_fnocc ]] && extra=(--cholesky "$TAU")
      case $prog in
        nnvmc_*|main_*)
          exe=$NNVMC; [[ $prog == main_* ]] && exe=$MAIN
          OMP_NUM_THREADS=1 "$exe" ccsd "$mol" --basis cc-pvdz --triples --json "${fc[@]}" "${extra[@]}" \
            > "$TMP/out.json" 2> "$TMP/err" || { cat "$TMP/err" >&2; exit 1; };;
        psi4_*)
          python3 bench/psi4_triples.py "${psi[@]}" --threads 1 "${fc[@]}" "${extra[@]}" > "$TMP/out.json";;
      esac
      read -r secs et < <(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(j['seconds_triples'], repr(j['e_t']))" "$TMP/out.json")
      printf "%-8s %-4s %-14s %10.2f %22s %6s\n" "$name" "$r" "$prog" "$secs" "$et" "$l" | tee -a "$TMP/rows"
    done
  done
  python3 - "$TMP/rows" "$name" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.split()[0] == sys.argv[2]]
med = {p: statistics.median(float(r[3]) for r in rows if r[2] == p) for p in sorted({r[2] for r in rows})}
line = f"{sys.argv[2]:<8} median (T) s:" + "".join(f"  {p} {s:.2f}" for p, s in med.items())
for a, b in (("psi4_ccenergy", "nnvmc_conv"), ("psi4_fnocc", "nnvmc_chol"), ("main_conv", "nnvmc_conv"), ("main_chol", "nnvmc_chol")):
    if a in med and b in med: line += f";  {a}/{b} {med[a] / med[b]:.2f}x"
print(line, flush=True)
PY
done
