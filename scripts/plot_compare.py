#!/usr/bin/env python3
"""Plots of an `nnvmc compare` output directory (reads compare.h5, written by the command).

usage: plot_compare.py OUTPUT_DIR
Writes OUTPUT_DIR/energy_vs_time.png (|E - E_ref| of the training iterations, running mean,
against training wall time, never drawn below the running mean's standard error: a smaller
difference is noise crossing zero, not accuracy; one panel per molecule, titled with its reference and that
reference's source; one line per ansatz/axis combination, its final evaluation as a point with
its error bar) and OUTPUT_DIR/final_errors.png (final evaluated |error| per cell with its error
bar, log scale, chemical accuracy dashed). In both, a failed cell is a cross in its label's
colour and a cell whose error bar the evaluation marked unreliable is drawn hollow; report.md
says why.
"""
import json
import math
import os
import sys

MISSING = []
try:
    import h5py
except ImportError:
    MISSING.append("h5py (Debian: python3-h5py)")
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
except ImportError:
    MISSING.append("matplotlib (Debian: python3-matplotlib)")
import numpy as np

FAILED = dict(marker="x", ms=8, mew=2, ls="none")  # in the colour of the cell's label


def running_mean(e, width):
    """The mean of the last `width` values at each point, and its standard error (as if the
    values were independent: a floor on the true one)."""
    e = np.asarray(e, dtype=float)
    shift = e[0] if len(e) else 0.0  # (sums of e - e[0]: E[x²] - mean² keeps its digits for -150 Eh energies)
    e = e - shift
    c = np.cumsum(np.insert(e, 0, 0.0))
    c2 = np.cumsum(np.insert(e * e, 0, 0.0))
    lo = np.maximum(0, np.arange(1, len(e) + 1) - width)
    k = np.arange(1, len(e) + 1) - lo
    mean = (c[1:] - c[lo]) / k
    var = np.maximum((c2[1:] - c2[lo]) / k - mean * mean, 0.0) * k / np.maximum(k - 1, 1)
    return mean + shift, np.sqrt(var / k)


def read(out):
    """The comparison's table as a dict: strings (per cell), table (numeric columns per cell),
    molecules, chemical_accuracy, curves {cell: (seconds, energy)}."""
    with h5py.File(os.path.join(out, "compare.h5"), "r", locking=False) as f:
        d = dict(strings=json.loads(f.attrs["strings"]), molecules=json.loads(f.attrs["molecules"]),
                 chemical_accuracy=float(f.attrs["chemical_accuracy"]),
                 table={k: np.asarray(f["table/" + k]) for k in f["table"]}, curves={})
        if "curves" in f:
            for cell in f["curves"]:
                d["curves"][cell] = (np.asarray(f[f"curves/{cell}/seconds"]), np.asarray(f[f"curves/{cell}/energy"]))
    return d


def figures(d):
    """Builds the two figures of a comparison read by read(): (energy_vs_time, final_errors)."""
    s, table, molecules, curves = d["strings"], d["table"], d["molecules"], d["curves"]
    chem = d["chemical_accuracy"]
    chem_label = f"chemical accuracy ({1e3 * chem:.1f} mEh)"
    n = len(s["cell"])
    # an axis varies when its values differ among the cells it applies to (a parameter-free
    # baseline's optimizer reads "none")
    axes_given = [k for k in ("laplacian", "optim", "dtype") if len(set(s[k]) - {"none"}) > 1]

    def label(i):
        return " ".join([s["ansatz"][i]] + [s[k][i] for k in axes_given if s[k][i] != "none"])

    def finished(i):
        return s["status"][i] == "done"

    def done(i):  # finished, with an error against a reference to plot
        return finished(i) and math.isfinite(table["error"][i])

    def seconds(i):  # (NaN where the cell's result.h5 lost rows)
        t = table["train_seconds"][i]
        return t if math.isfinite(t) else 0.0

    def reliable(i):
        return "error_bar_reliable" not in table or table["error_bar_reliable"][i] != 0

    labels = list(dict.fromkeys(label(i) for i in range(n)))  # file order
    colors = {l: plt.cm.tab10(k % 10) for k, l in enumerate(labels)}
    failed = [i for i in range(n) if s["status"][i] == "failed"]
    unreliable = [i for i in range(n) if done(i) and not reliable(i)]
    nothing_done = not any(finished(i) for i in range(n))
    # one legend for the figure: the ansatz/axis labels, then what the markers mean
    chem_h = Line2D([], [], color="k", ls="--", lw=0.8, label=chem_label)
    failed_h = [Line2D([], [], color="k", label="failed (report.md)", **FAILED)] if failed else []
    legend = [Line2D([], [], color=colors[l], marker="o", ms=4, lw=1.2, label=l) for l in labels] + [chem_h]
    if unreliable:
        legend.append(Line2D([], [], color="gray", marker="o", mfc="none", ls="none", label="error bar unreliable"))
    legend += failed_h

    # Energy error vs wall time, one panel per molecule.
    fig_t, axs = plt.subplots(1, len(molecules), figsize=(4.2 * len(molecules), 3.8), squeeze=False)
    for mi, mol in enumerate(molecules):
        ax = axs[0][mi]
        ref, ref_label = math.nan, ""
        floor = []  # where a failed cell's cross goes: the lowest error shown, or chemical accuracy
        for i in range(n):
            if s["molecule"][i] != mol:
                continue
            ref = table["reference"][i]
            ref_label = s.get("reference_label", [""] * n)[i]
            if s["cell"][i] in curves and math.isfinite(ref):
                t, e = curves[s["cell"][i]]
                if len(e):
                    sm, se = running_mean(e, max(1, len(e) // 10))
                    # (a user audit: noise crossing zero drew dips to 1e-6 Eh, "accuracy" far below
                    # the final evaluation's ± 4 mEh)
                    shown = np.maximum(np.abs(sm - ref), se)
                    ax.plot(t, shown, color=colors[label(i)], lw=1.2)
                    floor.append(np.nanmin(shown))
            if done(i):
                y = abs(table["error"][i])
                ax.errorbar([seconds(i)], [y], yerr=[table["energy_err"][i]], fmt="o",
                            color=colors[label(i)], mfc=colors[label(i)] if reliable(i) else "none", ms=5, capsize=2)
                floor.append(y)
        for i in failed:
            if s["molecule"][i] == mol:
                ax.plot([seconds(i)], [min([v for v in floor if v > 0] + [chem])], color=colors[label(i)], **FAILED)
        ax.axhline(chem, color="k", ls="--", lw=0.8)
        ax.set_yscale("log")
        ax.set_xlabel("training wall time (s)")
        title = f"{mol}: E_ref {ref:.4f} Eh" if math.isfinite(ref) else f"{mol}: no reference"
        if math.isfinite(ref) and ref_label:
            title += f"\n{ref_label}"
        ax.set_title(title, fontsize=9)
        if not any(finished(i) for i in range(n) if s["molecule"][i] == mol):
            ax.text(0.5, 0.5, "no finished cell", transform=ax.transAxes, ha="center", va="center", color="tab:red")
        elif not math.isfinite(ref):
            ax.text(0.5, 0.5, "no reference: errors not plotted", transform=ax.transAxes, ha="center", va="center")
        if mi == 0:
            ax.set_ylabel("|E − E_ref| (Eh)")
    ncol = min(4, len(legend), 2 * len(molecules))  # (a one-panel figure is narrow)
    fig_t.legend(handles=legend, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    fig_t.tight_layout(rect=(0, 0.06 + 0.05 * math.ceil(len(legend) / ncol), 1, 1))

    # Final errors: bars grouped by molecule, one bar per ansatz/axis label.
    fig_e, ax = plt.subplots(figsize=(max(5, 1.2 * len(molecules) * max(1, len(labels)) * 0.6), 3.8))
    width = 0.8 / max(1, len(labels))
    lowest = min([abs(table["error"][i]) for i in range(n) if done(i)] + [chem])
    for li, l in enumerate(labels):
        for mi, mol in enumerate(molecules):
            x = mi + (li - (len(labels) - 1) / 2) * width
            for i in range(n):
                if s["molecule"][i] != mol or label(i) != l:
                    continue
                if done(i):
                    bar = ax.bar([x], [max(abs(table["error"][i]), 1e-6)], width, yerr=[table["energy_err"][i]],
                                 capsize=2, color=colors[l] if reliable(i) else "none", edgecolor=colors[l],
                                 linewidth=1.2)[0]
                    if table["error"][i] < 0:
                        bar.set_hatch("//")
                elif s["status"][i] == "failed":
                    ax.plot([x], [lowest], color=colors[l], **FAILED)
    ax.axhline(chem, color="k", ls="--", lw=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(molecules)))
    ax.set_xticklabels(molecules)
    ax.set_xlim(-0.6, len(molecules) - 0.4)
    ax.set_ylabel("|E − E_ref| (Eh)")
    if nothing_done:
        ax.text(0.5, 0.5, "no finished cell", transform=ax.transAxes, ha="center", va="center", color="tab:red")
    bars = [Patch(facecolor=colors[l], edgecolor=colors[l], label=l) for l in labels]
    bars.append(Patch(facecolor="white", edgecolor="k", hatch="//", label="below E_ref"))
    if unreliable:
        bars.append(Patch(facecolor="none", edgecolor="gray", label="error bar unreliable"))
    ax.legend(handles=bars + [chem_h] + failed_h, fontsize=8, frameon=False, loc="upper left",
              bbox_to_anchor=(1.01, 1.0))
    fig_e.tight_layout()
    return fig_t, fig_e


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    out = argv[1]
    if MISSING:
        sys.exit("plot_compare.py needs " + " and ".join(MISSING) + " (or: pip install h5py matplotlib)")
    if not os.path.isfile(os.path.join(out, "compare.h5")):
        sys.exit(f"plot_compare.py: {out}: no compare.h5 there (the output directory of `nnvmc compare`)")
    fig_t, fig_e = figures(read(out))
    fig_t.savefig(os.path.join(out, "energy_vs_time.png"), dpi=120)
    fig_e.savefig(os.path.join(out, "final_errors.png"), dpi=120, bbox_inches="tight")


if __name__ == "__main__":
    main(sys.argv)
