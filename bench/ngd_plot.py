#!/usr/bin/env python3
"""Energy versus wall time of nnvmc training runs (reads result.h5: train/energy, train/seconds).

usage: ngd_plot.py OUT.png EXACT LABEL=RUN_DIR [LABEL=RUN_DIR ...]
Prints, per run, iterations, wall time and the mean energy of the last 10% of iterations.
"""
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np


def load(run_dir):
    with h5py.File(f"{run_dir}/result.h5", "r", locking=False) as f:
        return np.asarray(f["train/energy"]), np.cumsum(np.asarray(f["train/seconds"]))


def smooth(e, width):
    # trailing mean over `width` iterations
    c = np.cumsum(np.insert(e, 0, 0.0))
    out = np.empty_like(e)
    for i in range(len(e)):
        lo = max(0, i + 1 - width)
        out[i] = (c[i + 1] - c[lo]) / (i + 1 - lo)
    return out


def main():
    out, exact = sys.argv[1], float(sys.argv[2])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for spec in sys.argv[3:]:
        label, run_dir = spec.split("=", 1)
        e, t = load(run_dir)
        tail = e[-max(1, len(e) // 10):]
        print(f"{label}: {len(e)} iterations, {t[-1] / 60:.1f} min, last-10% mean "
              f"{tail.mean():.5f} (error vs exact {1000 * (tail.mean() - exact):+.2f} mHa)")
        ax.plot(t / 60, 1000 * (smooth(e, 50) - exact), label=f"{label} (50-it mean)")
    ax.axhline(1.6, color="k", ls="--", lw=0.8, label="chemical accuracy (1.6 mHa)")
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_xlabel("wall time (min)")
    ax.set_ylabel("E - E_exact (mHa)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
