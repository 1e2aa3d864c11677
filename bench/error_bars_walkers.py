#!/usr/bin/env python3
"""Which error bar should an evaluation of W walkers × n steps state? W independent AR(1) chains
(correlation time τ = (1+φ)/(1−φ) steps); the evaluation's series is the walker average per step.
Over R evaluations per row: observed spread of the means / mean stated error ("ratio", 1 is
honest), how often 1σ covers the true mean ("cov", 68 % nominal), and the relative spread of the
stated errors ("relsd", the estimator's own precision).
  A  reblocking of the series where a plateau is found (Lee et al.'s criterion, ≥ 8 blocks), else
     the spread of the walkers' averages (nnvmc before 2026-12-04)
  B  always the spread of the walkers' averages (nnvmc now, from kMinWalkersForChainsError = 16
     walkers: src/train/evaluate.hpp)
  C  reblocking where the plateau has ≥ 16 blocks, else the walkers' spread (tried: less biased
     than A where A is worst, more where A is fine)
'pl' is how often the reblocking finds a plateau.
usage: python3 bench/error_bars_walkers.py [R] [W ...]   (numpy only; ~10 s for R = 1500 and W = 16 64)"""
import sys

import numpy as np

R = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
WALKERS = [int(w) for w in sys.argv[2:]] or [16, 64]
rng = np.random.default_rng(2)


def reblocking(series):
    """(error, plateau, blocks at the chosen level), as src/train/blocking.cpp."""
    n = len(series)
    x = np.asarray(series, float)
    se, blocks = [], []
    while len(x) >= 2:
        m = len(x)
        se.append(np.sqrt(((x - x.mean()) ** 2).sum() / m / max(1, m - 1)))
        blocks.append(m)
        x = 0.5 * (x[0:2 * (m // 2):2] + x[1:2 * (m // 2):2])
    level = next((j for j in range(len(se)) if 2.0 ** (3 * j) > 2 * n * (se[j] / se[0]) ** 4), -1)
    plateau = level >= 0 and blocks[level] >= 8
    if level < 0:
        level = 0
        while level + 1 < len(se) and blocks[level + 1] >= 8:
            level += 1
    return se[level], plateau, blocks[level]


print(f"# R = {R} evaluations per row")
for walkers in WALKERS:
    for n in (100, 200, 500, 1000):
        for phi in (0.0, 0.5, 0.8):
            x = rng.standard_normal((R, walkers)) / np.sqrt(1 - phi * phi)
            average, total = np.empty((R, n)), np.zeros((R, walkers))
            for i in range(n):
                x = phi * x + rng.standard_normal((R, walkers))
                average[:, i] = x.mean(1)
                total += x
            mean = average.mean(1)
            chains = (total / n).std(1, ddof=1) / np.sqrt(walkers)
            rb = [reblocking(average[r]) for r in range(R)]
            se = np.array([e for e, _, _ in rb])
            plateau = np.array([p for _, p, _ in rb])
            blocks = np.array([b for _, _, b in rb])
            spread = mean.std()
            line = f"W={walkers:3d} n={n:5d} tau={(1 + phi) / (1 - phi):4.1f} pl={plateau.mean():.2f}"
            for name, err in (("A", np.where(plateau, se, chains)), ("B", chains),
                              ("C", np.where(plateau & (blocks >= 16), se, chains))):
                line += (f" | {name} ratio={spread / err.mean():.2f} cov={np.mean(np.abs(mean) < err):.2f}"
                         f" relsd={err.std() / err.mean():.2f}")
            print(line, flush=True)
