#!/usr/bin/env python3
"""Error bars of the mean of AR(1) series (issue 18): the stated 1σ of four estimators against the
exact standard error, and how often 1σ covers the true mean (0), over R series per (φ, n).
  jonsson  reblocking at the first level passing Jonsson's lag-1 χ² test (nnvmc before issue 18)
  lee      reblocking at the smallest block B with B³ > 2n(σ_B/σ_1)⁴ (Lee et al., PRE 83, 066706 (2011); nnvmc now)
  sokal    integrated autocorrelation time with Sokal's window (W ≥ 5τ)
  batch    batch means with ⌊√n⌋ values per batch
'noplat' is how often nnvmc reports no plateau (criterion never met at a level with ≥ 8 blocks).
usage: python3 bench/error_bars_ar1.py [R]        (numpy only; ~3 min for R = 400)"""
import sys
import numpy as np

R = int(sys.argv[1]) if len(sys.argv) > 1 else 400
rng = np.random.default_rng(1)
Q99 = [6.634897, 9.210340, 11.344867, 13.276704, 15.086272, 16.811894, 18.475307, 20.090235, 21.665994,
       23.209251, 24.724970, 26.216967, 27.688250, 29.141238, 30.577914, 31.999927, 33.408664, 34.805306]


def ar1(phi, n):
    e = rng.standard_normal(n + 1)
    x = np.empty(n)
    v = e[0] / np.sqrt(1 - phi * phi)
    for i in range(n):
        v = phi * v + e[i + 1]
        x[i] = v
    return x


def exact_se(phi, n):
    k = np.arange(1, n)
    return np.sqrt((n + 2 * np.sum((n - k) * phi**k)) / (1 - phi * phi)) / n


def levels(x):
    mu, out = x.mean(), []
    while len(x) >= 2:
        n, d = len(x), x - mu
        out.append((n, (d * d).sum() / n, (d[:-1] * d[1:]).sum() / n))
        x = 0.5 * (x[0:n // 2 * 2:2] + x[1:n // 2 * 2:2])
    return out


def jonsson(x, min_blocks=16):
    L = levels(x)
    d, acc, M = len(L), 0.0, [0.0] * len(L)
    for j in range(d - 1, -1, -1):
        n, s2, g = L[j]
        acc += n * (g / s2) ** 2 if s2 > 0 else 0
        M[j] = acc
    last = 0
    while last + 1 < d and L[last + 1][0] >= min_blocks:
        last += 1
    lvl = last
    for j in range(last + 1):
        q = Q99[d - j - 1] if d - j <= len(Q99) else (d - j) + 2.326 * np.sqrt(2 * (d - j))
        if M[j] < q:
            lvl = j
            break
    n, s2, _ = L[lvl]
    return np.sqrt(s2 / (n - 1))


def lee(x, min_blocks=8):
    L = levels(x)
    se = [np.sqrt(s2 / (n - 1)) for n, s2, _ in L]
    crit = next((j for j in range(len(L)) if 8.0**j > 2 * len(x) * (se[j] / se[0]) ** 4), None)
    if crit is not None and L[crit][0] >= min_blocks:
        return se[crit], True
    # no plateau (nnvmc since 2026-12-05): the largest of level 0, the deepest level with
    # min_blocks blocks and the criterion's level with fewer blocks (before: the criterion's level
    # if any, else the deepest level with min_blocks blocks)
    j = 0
    while j + 1 < len(L) and L[j + 1][0] >= min_blocks:
        j += 1
    return max(se[0], se[j], se[crit] if crit is not None else 0.0), False


def sokal(x):
    n, m = len(x), x.mean()
    c0, tau = ((x - m) ** 2).mean(), 1.0
    for w in range(1, n // 2):
        tau += 2 * ((x[:-w] - m) * (x[w:] - m)).sum() / n / c0
        if w >= 5 * tau:
            break
    return np.sqrt(tau * c0 * n / (n - 1) / n)


def batch(x):
    n = len(x)
    b = int(np.sqrt(n))
    nb = n // b
    m = x[:nb * b].reshape(nb, b).mean(1)
    return m.std(ddof=1) / np.sqrt(nb)


print(f"# R = {R} series per row; each cell: mean stated error / exact error, then % of series whose 1σ covers 0")
print(f"{'phi':>5} {'n':>6} {'tau':>5} | {'jonsson':>12} {'lee (now)':>12} {'sokal':>12} {'batch':>12} | noplat")
for phi in [0.5, 0.8, 0.9, 0.95]:
    for n in [500, 2000, 10000]:
        ex = exact_se(phi, n)
        err = {k: [] for k in ("jonsson", "lee", "sokal", "batch")}
        cov = dict.fromkeys(err, 0)
        noplat = 0
        for _ in range(R):
            x = ar1(phi, n)
            m = abs(x.mean())
            e_lee, plateau = lee(x)
            noplat += not plateau
            for k, e in (("jonsson", jonsson(x)), ("lee", e_lee), ("sokal", sokal(x)), ("batch", batch(x))):
                err[k].append(e)
                cov[k] += m <= e
        tau = (1 + phi) / (1 - phi)
        cells = " ".join(f"{np.mean(err[k]) / ex:5.2f}/{100 * cov[k] / R:3.0f}% " for k in err)
        print(f"{phi:5.2f} {n:6d} {tau:5.1f} | {cells}| {100 * noplat / R:4.0f}%")
