#!/usr/bin/env python3
"""Orbformer figures (issue 14): parameter counts (published default, CPU preset) and time per
training iteration on LiH, Orbformer preset (configs/runs/lih_orbformer.yaml), the same
Orbformer trained on five LiH bond lengths at once (configs/runs/lih_orbformer_transfer.yaml:
seconds per iteration per molecule = per iteration / 5), FermiNet preset
(configs/runs/lih_ferminet_spring.yaml) and Psiformer preset (configs/runs/lih_psiformer.yaml):
same optimizer (SPRING), sampler, walkers per molecule and Laplacian method, one thread each,
runs interleaved over ROUNDS rounds. MODELS (comma-separated names) picks a subset.

The machine is shared, so besides the wall-clock seconds per iteration (median, result.h5) the
CPU seconds per iteration are measured: the CPU time of a run of 2 + ITERS iterations minus
that of a run of 2 iterations (same seed: same start-up, burn-in and first iterations), / ITERS.

Usage: bench/orbformer_speed.py BUILD_DIR OUT_DIR [ROUNDS ITERS WALKERS LAPLACIAN]
"""
import os, re, resource, statistics, subprocess, sys

import h5py

build, out = sys.argv[1], sys.argv[2]
rounds, iters, walkers, laplacian = (int(sys.argv[3]) if len(sys.argv) > 3 else 3,
                                     int(sys.argv[4]) if len(sys.argv) > 4 else 6,
                                     sys.argv[5] if len(sys.argv) > 5 else "512",
                                     sys.argv[6] if len(sys.argv) > 6 else "forward")
binary = os.path.join(build, "src/app/nnvmc")
env = dict(os.environ, OMP_NUM_THREADS="1")
os.makedirs(out, exist_ok=True)
common = [f"sampler.walkers={walkers}", f"hamiltonian.laplacian={laplacian}", "pretrain.steps=0", "eval.steps=0",
          "run.threads=1", "run.checkpoint_every=0", "optim.log_every=1000", "sampler.burn_in=50"]


def run(config, name, n, extra=()):
    """Trains n iterations afresh (--force) in OUT/name; returns (child CPU seconds, log text).
    `extra` replaces common settings of the same key (nnvmc refuses a key given twice)."""
    keys = {e.split("=", 1)[0] for e in extra}
    settings = [c for c in common if c.split("=", 1)[0] not in keys] + list(extra)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    log = subprocess.run([binary, "train", "--force", config, f"run.output={out}/{name}", f"optim.iterations={n}",
                          *settings], env=env, capture_output=True, text=True)
    if log.returncode != 0:
        sys.exit(f"{name}: nnvmc train failed (exit {log.returncode}):\n{(log.stdout + log.stderr)[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, log.stdout + log.stderr


_, default_log = run("configs/runs/lih_orbformer.yaml", "default", 0, ["model.orbformer={}", "sampler.walkers=8"])
all_models = {"ferminet": ("configs/runs/lih_ferminet_spring.yaml", 1),
              "psiformer": ("configs/runs/lih_psiformer.yaml", 1),
              "orbformer": ("configs/runs/lih_orbformer.yaml", 1),
              "orbformer_x5": ("configs/runs/lih_orbformer_transfer.yaml", 5)}
chosen = os.environ.get("MODELS", ",".join(all_models)).split(",")
models = {m: all_models[m][0] for m in chosen}
molecules = {m: all_models[m][1] for m in chosen}
cpu, wall, params = {m: [] for m in models}, {m: [] for m in models}, {}
for r in range(rounds):
    for m, config in models.items():
        short, _ = run(config, f"{m}_short_{r}", 2)
        long, log = run(config, f"{m}_{r}", 2 + iters)
        cpu[m].append((long - short) / iters / molecules[m])
        wall[m] += [x / molecules[m] for x in h5py.File(f"{out}/{m}_{r}/result.h5")["train/seconds"][2:]]
        params[m] = int(re.search(r"\((\d+) parameters\)", log).group(1))
print(re.search(r"orbformer: .*", default_log).group(0))
print(f"LiH, {walkers} walkers per molecule, SPRING, laplacian {laplacian}, 1 thread, {rounds} rounds x {iters} iterations")
print("seconds per iteration per molecule (orbformer_x5: one iteration over 5 molecules / 5)")
for m in models:
    print(f"{m:12s} {params[m]:8d} parameters  CPU {statistics.median(cpu[m]):.3f} s/iteration/molecule (median of "
          f"{rounds})  wall {statistics.median(wall[m]):.3f} (median of {len(wall[m])})")
base = "ferminet" if "ferminet" in models else chosen[0]
for m in models:
    if m != base:
        print(f"{m} / {base}: CPU {statistics.median(cpu[m]) / statistics.median(cpu[base]):.2f}, "
              f"wall {statistics.median(wall[m]) / statistics.median(wall[base]):.2f}")
