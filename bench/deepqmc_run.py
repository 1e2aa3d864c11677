"""Times DeepQMC 1.2 training iterations on LiH with the FermiNet of configs/runs/lih_ferminet*.yaml.

Run inside the venv bench/deepqmc_compare.sh makes (deepqmc 1.2.0, jax 0.4.31, kfac-jax 0.0.6):
    python bench/deepqmc_run.py --opt kfac --laplacian forward --steps 40
Prints a summary line and one JSON line: seconds per iteration (median over iterations after --skip, which
include JIT compilation), wall and process CPU time (all threads), the parameter count and the
settings. Float64 (JAX_ENABLE_X64),
one thread (XLA flags set before jax is imported), no pretraining, a short sampler
equilibration that is not timed, 512 walkers, 10 Metropolis steps per iteration
(decorr_metropolis_ferminet). The FermiNet is DeepQMC's own (ansatz=ferminet) with our widths:
3 interactions, one-electron width 48, two-electron width 12, 8 full determinants.
"""
import argparse
import json
import os
import statistics
import time

os.environ.setdefault("JAX_ENABLE_X64", "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import deepqmc  # noqa: E402,F401  (first: it sets JAX options; registers the config resolvers)
import deepqmc.train as dq_train  # noqa: E402
import jax  # noqa: E402
import tqdm.auto  # noqa: E402
from hydra import compose, initialize_config_module  # noqa: E402
from hydra.utils import call  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

STAMPS = []


class TimedRange(tqdm.auto.tqdm):
    """The training loop's progress bar, recording the time each iteration starts."""

    def __iter__(self):
        for x in super().__iter__():
            STAMPS.append((time.perf_counter(), time.process_time()))
            yield x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--opt", default="kfac", choices=["kfac", "adamw"])
    ap.add_argument("--laplacian", default="forward", choices=["forward", "loop"])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--skip", type=int, default=5)
    ap.add_argument("--walkers", type=int, default=512)
    ap.add_argument("--eq-steps", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    assert jax.config.jax_enable_x64, "float64 requested"
    overrides = [
        "task=train",
        "ansatz=ferminet",
        "hamil=" + ("qc_forward_laplacian" if a.laplacian == "forward" else "qc"),
        "task/sampler_factory=decorr_metropolis_ferminet",
        "task/opt=" + a.opt,
        f"task.electron_batch_size={a.walkers}",
        "task.pretrain_steps=0",
        f"task.steps={a.steps}",
        f"+task.max_eq_steps={a.eq_steps}",
        f"task.seed={a.seed}",
        "task.workdir=null",
        "ansatz.n_determinants=8",
        "ansatz.omni_factory.embedding_dim=48",
        "ansatz.omni_factory.gnn_factory.n_interactions=3",
        "ansatz.omni_factory.gnn_factory.two_particle_stream_dim=12",
    ]
    with initialize_config_module(config_module="deepqmc.conf", version_base=None):
        cfg = compose(config_name="config", overrides=overrides)
    task = OmegaConf.to_object(cfg)["task"]
    dq_train.trange = lambda *args, **kw: TimedRange(range(*args), **{**kw, "disable": True})
    dq_train.tqdm = lambda *args, **kw: tqdm.auto.tqdm(*args, **{**kw, "disable": True})
    t0 = time.perf_counter()
    state = call(task, _convert_="all")
    end = (time.perf_counter(), time.process_time())
    ends = STAMPS[1:] + [end]
    wall = [b[0] - a_[0] for a_, b in zip(STAMPS, ends)][a.skip:]
    cpu = [b[1] - a_[1] for a_, b in zip(STAMPS, ends)][a.skip:]
    params = sum(x.size for x in jax.tree_util.tree_leaves(state.params))
    print(f"{'deepqmc':<6s} {a.opt:<7s} {a.laplacian:<8s} {statistics.median(wall):8.4f} s/it wall "
          f"{statistics.median(cpu):8.4f} s/it cpu  ({len(wall)} iterations timed; {int(params)} parameters; "
          f"total {end[0] - t0:.0f} s incl. JIT)")
    print(json.dumps({
        "program": "deepqmc", "opt": a.opt, "laplacian": a.laplacian, "walkers": a.walkers,
        "iterations": len(STAMPS), "timed": len(wall), "s_per_it": statistics.median(wall),
        "cpu_s_per_it": statistics.median(cpu), "params": int(params), "total_s": end[0] - t0,
        "jax": jax.__version__, "x64": bool(jax.config.jax_enable_x64),
    }))


if __name__ == "__main__":
    main()
