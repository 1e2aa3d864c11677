#!/usr/bin/env python3
"""Plots of an `nnvmc profile` output directory (reads profile.json, written by the command).

usage: plot_profile.py OUTPUT_DIR
Writes stage_bars.png (stacked stage times per molecule), op_mix.png (operator-group shares per
stage and molecule), roofline.png (measured roofs with each stage at its arithmetic intensity)
and scaling.png (stage time against electrons, log-log, with the fitted power laws).
"""
import json
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

GROUPS = ["gemm", "elementwise", "reduction", "data_movement", "linalg", "other"]


def leaf_stages(m):
    """Stages whose times add up: sub-stages replace their parent, the parent keeps the rest."""
    out = []
    st = m["stages"]
    for s in m["top_level_stages"]:
        subs = [k for k in st if k.startswith(s + ".")]
        if subs:
            rest = st[s]["seconds"] - sum(st[k]["seconds"] for k in subs)
            out += [(k, st[k]["seconds"]) for k in sorted(subs)]
            out.append((s + " (rest)", max(rest, 0.0)))
        else:
            out.append((s, st[s]["seconds"]))
    return out


def main(out):
    with open(f"{out}/profile.json") as f:
        p = json.load(f)
    mols = p["molecules"]
    names = [m["molecule"] for m in mols]
    title = f'{p["ansatz"]}, laplacian {p["laplacian"]}, {p["dtype"]}, {p["threads"]} thread(s)'

    # Stacked stage bars.
    fig, ax = plt.subplots(figsize=(1.2 * len(mols) + 3, 3.8))
    labels = []
    for m in mols:
        for k, _ in leaf_stages(m):
            if k not in labels:
                labels.append(k)
    bottom = np.zeros(len(mols))
    for k in labels:
        v = np.array([dict(leaf_stages(m)).get(k, 0.0) for m in mols])
        ax.bar(names, v, bottom=bottom, label=k)
        bottom += v
    ax.set_ylabel("s / iteration (median)")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    fig.savefig(f"{out}/stage_bars.png", dpi=120)
    plt.close(fig)

    # Operator mix per stage.
    rows = []
    for m in mols:
        for s in m["top_level_stages"] + [k for k in m["stages"] if "." in k]:
            g = m["stages"][s]["groups"]
            if g is None:  # not profiled (--profile-iterations 0)
                continue
            tot = sum(g[x]["seconds"] for x in GROUPS)
            if tot > 0:
                rows.append((f'{m["molecule"]}:{s}', [g[x]["seconds"] / tot for x in GROUPS]))
    if rows:
        fig, ax = plt.subplots(figsize=(8, 0.28 * len(rows) + 1.5))
        left = np.zeros(len(rows))
        for gi, gname in enumerate(GROUPS):
            v = np.array([r[1][gi] for r in rows])
            ax.barh([r[0] for r in rows], v, left=left, label=gname)
            left += v
        ax.invert_yaxis()
        ax.set_xlabel("share of operator self time")
        ax.legend(fontsize=7, ncol=6, frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.0))
        ax.tick_params(axis="y", labelsize=7)
        fig.tight_layout()
        fig.savefig(f"{out}/op_mix.png", dpi=120, bbox_inches="tight")
        plt.close(fig)

    # Roofline.
    rl = p["roofline"]  # null when not measured (--no-roofline)
    if rl and rl["peak_gflops"] > 0:
        fig, ax = plt.subplots(figsize=(5.5, 4))
        x = np.logspace(-3, 3, 200)
        ax.plot(x, np.minimum(rl["peak_gflops"], rl["bandwidth_gbs"] * x), "k-", lw=1.2,
                label=f'measured: {rl["peak_gflops"]:.0f} GFLOP/s, {rl["bandwidth_gbs"]:.0f} GB/s')
        if (rl.get("theoretical_gflops") or 0) > 0:
            ax.axhline(rl["theoretical_gflops"], color="gray", ls=":", lw=1, label="nominal peak (base clock)")
        markers = "osD^v<>p*h"
        stage_colors = {}
        for mi, m in enumerate(mols):
            for s in m["top_level_stages"] + [k for k in m["stages"] if "." in k]:
                st = m["stages"][s]
                if st.get("intensity") and st.get("gflops"):
                    c = stage_colors.setdefault(s, plt.cm.tab10(len(stage_colors) % 10))
                    ax.plot(st["intensity"], st["gflops"], markers[mi % len(markers)], color=c,
                            label=s if mi == 0 else None)
        for mi, m in enumerate(mols):
            ax.plot([], [], markers[mi % len(markers)], color="gray", label=m["molecule"])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOP/byte, estimated)")
        ax.set_ylabel("GFLOP/s")
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=6, frameon=False)
        fig.tight_layout()
        fig.savefig(f"{out}/roofline.png", dpi=120)
        plt.close(fig)

    # Scaling.
    ne = np.array([m["n_electrons"] for m in mols], dtype=float)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for s, fit in sorted(p["time_scaling"].items()):
        if s.startswith("("):
            continue
        y = np.array([m["iteration_seconds"] if s == "iteration" else m["stages"].get(s, {}).get("seconds", math.nan)
                      for m in mols])
        if not np.any(np.isfinite(y) & (y > 0)):
            continue
        lbl = s if fit["exponent"] is None else f'{s}: N^{fit["exponent"]:.2f}'
        line, = ax.plot(ne, y, "o", label=lbl)
        if fit["exponent"] is not None and len(ne) > 1:
            xs = np.linspace(ne.min(), ne.max(), 50)
            ax.plot(xs, fit["prefactor"] * xs ** fit["exponent"], "-", color=line.get_color(), lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("electrons N")
    ax.set_ylabel("s / iteration")
    ax.legend(fontsize=7, frameon=False)
    fig.tight_layout()
    fig.savefig(f"{out}/scaling.png", dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
