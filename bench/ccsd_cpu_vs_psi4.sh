#!/usr/bin/env bash
# CCSD seconds per iteration, nnvmc vs Psi4 on the same machine, one thread each, runs
# interleaved (nnvmc conv, ccenergy, nnvmc Cholesky, fnocc CD-CCSD; repeated REPEATS times):
#   nnvmc: OMP_NUM_THREADS=1 nnvmc ccsd MOL --basis cc-pvdz --json --max-iterations ITERS --allow-unconverged [--cholesky TAU]
#   Psi4:  bench/psi4_ccsd_periter.py (two runs, per-iteration = difference; ccenergy with PK
#          integrals, fnocc CD-CCSD with scf_type cd and the same TAU; OpenBLAS pinned to 1 thread)
#   nnvmc (and MAIN=path/to/main's nnvmc, which adds main_conv / main_chol): two runs of ITERS and
#          2·ITERS iterations, the CPU-time difference per iteration, as Psi4's (so both are
#          steady-state iterations: set-up and the first iterations' heap growth cancel). Before
#          2026-12-04 nnvmc's figure was its JSON's per-iteration mean over the first ITERS
#          iterations, which includes that warm-up (about +5 % on (H2O)6).
# Prints one line per run (wall and CPU = user + system seconds per iteration, load average) and
# a median line per system and program. The machine is shared: CPU seconds are the fairer figure.
# usage: bench/ccsd_cpu_vs_psi4.sh "4 c4h4 5 6" [NNVMC] [TAU]
#        env: REPEATS=2 ITERS=3 FROZEN=0 MAIN= PROGRAMS="nnvmc_conv psi4_ccenergy nnvmc_chol psi4_fnocc"
set -euo pipefail
source "$(dirname "$0")/ccsd_system.sh"
SYSTEMS=${1:-"4 c4h4"}; NNVMC=${2:-build/src/app/nnvmc}; TAU=${3:-1e-5}
REPEATS=${REPEATS:-2}; ITERS=${ITERS:-3}; FROZEN=${FROZEN:-0}; MAIN=${MAIN:-}
PROGRAMS=${PROGRAMS:-"nnvmc_conv psi4_ccenergy nnvmc_chol psi4_fnocc"}
# with MAIN, each nnvmc_X of PROGRAMS gets its main_X (before/after in one run)
if [ -n "$MAIN" ]; then
  [[ " $PROGRAMS " == *" nnvmc_conv "* ]] && PROGRAMS="main_conv $PROGRAMS"
  [[ " $PROGRAMS " == *" nnvmc_chol "* ]] && PROGRAMS="$PROGRAMS main_chol"
fi
XYZ=${XYZ:-bench/molecules/water_clusters.xyz}
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
fc=(); pfc=(); [ "$FROZEN" = 1 ] && fc=(--frozen-core) && pfc=(--frozen-core)
load() { cut -d' ' -f1 /proc/loadavg; }
echo "# $(date -u +%F' '%H:%M) UTC; nnvmc $(git rev-parse --short HEAD 2>/dev/null); $(nproc) cores; tau $TAU; frozen core $FROZEN"
echo "# nnvmc binary: $NNVMC; main binary: ${MAIN:-none}; $(uptime)"
printf "%-8s %-6s %-10s %9s %9s %6s\n" system run program wall/it cpu/it load
for sys in $SYSTEMS; do
  resolve_system "$sys" "$TMP"
  for r in $(seq 1 "$REPEATS"); do
    for prog in $PROGRAMS; do
      l=$(load)
      case $prog in
        nnvmc_conv|nnvmc_chol|main_conv|main_chol)
          extra=(); [[ $prog == *_chol ]] && extra=(--cholesky "$TAU")
          exe=$NNVMC; [[ $prog == main_* ]] && exe=$MAIN
          read -r wall cpu < <(python3 - "$exe" "$mol" "$ITERS" "${fc[@]}" "${extra[@]}" <<'PY'
import json, resource, subprocess, sys, os
exe, mol, iters, rest = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
def run(n):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([exe, "ccsd", mol, "--basis", "cc-pvdz", "--json", "--max-iterations", str(n),
                          "--allow-unconverged", *rest], capture_output=True, text=True, check=True,
                         env=dict(os.environ, OMP_NUM_THREADS="1")).stdout
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return json.loads(out)["seconds_per_iteration"], r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
w1, c1 = run(iters); w2, c2 = run(2 * iters)
cpu = (c2 - c1) / iters
print(w2, cpu if cpu > 0 else "nan")   # wall: the binary's own per-iteration mean of the longer run; nan: below the noise
PY
);;
        psi4_ccenergy|psi4_fnocc)
          extra=(); [ $prog = psi4_fnocc ] && extra=(--cholesky "$TAU")
          python3 bench/psi4_ccsd_periter.py "${psi[@]}" --threads 1 "${pfc[@]}" "${extra[@]}" > "$TMP/out.json"
          read -r wall cpu < <(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(*(('nan' if j[k] is None else j[k]) for k in ('seconds_per_iteration', 'cpu_per_iteration')))" "$TMP/out.json");;
      esac
      printf "%-8s %-6s %-14s %9.3f %9.3f %6s\n" "$name" "$r" "$prog" "$wall" "$cpu" "$l" | tee -a "$TMP/rows"
    done
  done
  python3 - "$TMP/rows" "$name" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.split()[0] == sys.argv[2]]
progs = sorted({r[2] for r in rows})
med = {p: (statistics.median(float(r[3]) for r in rows if r[2] == p), statistics.median(float(r[4]) for r in rows if r[2] == p))
       for p in progs}
line = f"{sys.argv[2]:<8} median CPU s/it (wall s/it):"
for p in progs: line += f"  {p} {med[p][1]:.3f} ({med[p][0]:.3f})"
for a, b in (("psi4_ccenergy", "nnvmc_conv"), ("psi4_fnocc", "nnvmc_chol"), ("main_conv", "nnvmc_conv"), ("main_chol", "nnvmc_chol")):
    if a in med and b in med: line += f";  {a}/{b} CPU {med[a][1] / med[b][1]:.2f}x"
print(line, flush=True)
PY
done
