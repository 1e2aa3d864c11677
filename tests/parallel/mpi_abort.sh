#!/usr/bin/env bash
# A rank that throws must end the whole job: mpirun exits with code 1 (the failing rank's, as
# nnvmc's own exit code for a failed run) within seconds (no hang), and stderr names the failing
# rank's error. Usage: mpi_abort.sh <mpirun> <flags...> -- <probe>
set -u
launcher=()
while [ "$1" != "--" ]; do launcher+=("$1"); shift; done
shift
start=$(date +%s)
err=$(timeout 120 "${launcher[@]}" "$@" 2>&1 >/dev/null)
rc=$?
took=$(( $(date +%s) - start ))
echo "$err" | tail -n 20
echo "mpirun exit code $rc after ${took}s"
[ "$rc" -ne 0 ] || { echo "FAIL: the job succeeded"; exit 1; }
[ "$rc" -ne 124 ] || { echo "FAIL: the job hung (killed by timeout)"; exit 1; }
[ "$rc" -eq 1 ] || { echo "FAIL: exit code $rc, not the failing rank's 1"; exit 1; }
echo "$err" | grep -q "injected failure on the last rank" || { echo "FAIL: the failing rank's message is missing"; exit 1; }
[ "$took" -le 60 ] || { echo "FAIL: took ${took}s"; exit 1; }
echo "ok"
