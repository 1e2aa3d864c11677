#!/usr/bin/env python3
"""Plots of an `nnvmc compare` output directory (reads compare.h5, written by the command).

usage: plot_compare.py OUTPUT_DIR
Writes OUTPUT_DIR/energy_vs_time.png (|E - E_ref| of the training iterations, running mean,
against training wall time; one panel per molecule, one line per ansatz/axis combination) and
OUTPUT_DIR/final_errors.png (final evaluated |error| per cell with its error bar, log scale,
chemical accuracy dashed).
"""
import json
import math
import sys

import h5py
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np


def running_mean(e, width):
    c = np.cumsum(np.insert(e, 0, 0.0))
    lo = np.maximum(0, np.arange(1, len(e) + 1) - width)
    return (c[1:] - c[lo]) / (np.arange(1, len(e) + 1) - lo)


def main(out):
    with h5py.File(f"{out}/compare.h5", "r", locking=False) as f:
        s = json.loads(f.attrs["strings"])
        molecules = json.loads(f.attrs["molecules"])
        chem = float(f.attrs["chemical_accuracy"])
        table = {k: np.asarray(f["table/" + k]) for k in f["table"]}
        curves = {}
        if "curves" in f:
            for cell in f["curves"]:
                curves[cell] = (np.asarray(f[f"curves/{cell}/seconds"]), np.asarray(f[f"curves/{cell}/energy"]))
    n = len(s["cell"])
    # an axis varies when its values differ among the cells it applies to (a parameter-free
    # baseline's optimizer reads "none")
    axes_given = [k for k in ("laplacian", "optim", "dtype") if len(set(s[k]) - {"none"}) > 1]

    def label(i):
        return " ".join([s["ansatz"][i]] + [s[k][i] for k in axes_given if s[k][i] != "none"])

    labels = list(dict.fromkeys(label(i) for i in range(n)))  # file order
    colors = {l: plt.cm.tab10(k % 10) for k, l in enumerate(labels)}

    # Energy error vs wall time, one panel per molecule.
    fig, axs = plt.subplots(1, len(molecules), figsize=(4.2 * len(molecules), 3.6), squeeze=False)
    for mi, mol in enumerate(molecules):
        ax = axs[0][mi]
        ref = math.nan
        for i in range(n):
            if s["molecule"][i] != mol:
                continue
            ref = table["reference"][i]
            if s["cell"][i] in curves and math.isfinite(ref):
                t, e = curves[s["cell"][i]]
                if len(e):
                    sm = running_mean(e, max(1, len(e) // 10))
                    ax.plot(t, np.abs(sm - ref), color=colors[label(i)], label=label(i), lw=1.2)
            if s["status"][i] == "done" and math.isfinite(table["error"][i]):
                ax.errorbar([table["train_seconds"][i]], [abs(table["error"][i])], yerr=[table["energy_err"][i]],
                            fmt="o", color=colors[label(i)], ms=4, capsize=2)
        ax.axhline(chem, color="k", ls="--", lw=0.8)
        ax.set_yscale("log")
        ax.set_xlabel("training wall time (s)")
        ax.set_title(f"{mol}" + (f"  (ref {ref:.4f})" if math.isfinite(ref) else "  (no reference)"))
        if mi == 0:
            ax.set_ylabel("|E − E_ref| (Eh)")
    handles, names = axs[0][0].get_legend_handles_labels()
    for ax in axs[0][1:]:
        h, l = ax.get_legend_handles_labels()
        for hh, ll in zip(h, l):
            if ll not in names:
                handles.append(hh)
                names.append(ll)
    if handles:
        fig.legend(handles, names, loc="lower center", ncol=min(4, len(names)), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.1 if handles else 0, 1, 1))
    fig.savefig(f"{out}/energy_vs_time.png", dpi=120)
    plt.close(fig)

    # Final errors: bars grouped by molecule, one bar per ansatz/axis label.
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(molecules) * max(1, len(labels)) * 0.6), 3.8))
    width = 0.8 / max(1, len(labels))
    for li, l in enumerate(labels):
        xs, ys, es, hatches = [], [], [], []
        for mi, mol in enumerate(molecules):
            for i in range(n):
                if s["molecule"][i] == mol and label(i) == l and s["status"][i] == "done" \
                        and math.isfinite(table["error"][i]):
                    xs.append(mi + (li - (len(labels) - 1) / 2) * width)
                    ys.append(max(abs(table["error"][i]), 1e-6))
                    es.append(table["energy_err"][i])
                    hatches.append(table["error"][i] < 0)
        if xs:
            bars = ax.bar(xs, ys, width, yerr=es, capsize=2, color=colors[l], label=l)
            for b, neg in zip(bars, hatches):
                if neg:
                    b.set_hatch("//")
    ax.axhline(chem, color="k", ls="--", lw=0.8, label="chemical accuracy")
    ax.set_yscale("log")
    ax.set_xticks(range(len(molecules)))
    ax.set_xticklabels(molecules)
    ax.set_ylabel("|E − E_ref| (Eh), hatched: below E_ref")
    ax.legend(fontsize=8, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(f"{out}/final_errors.png", dpi=120, bbox_inches="tight")
    plt.close(fig)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
