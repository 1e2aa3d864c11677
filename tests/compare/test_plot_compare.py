#!/usr/bin/env python3
"""scripts/plot_compare.py on comparisons built here: what its figures say about failed cells,
unreliable error bars, parameter-free baselines and references (a user audit: failed cells were
left out without a trace, unreliable error bars drawn as reliable ones, the baseline's points
and the chemical-accuracy line had no legend entry, panel titles did not say whose reference)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import h5py
import numpy as np

sys.path.insert(0, os.environ.get("NNVMC_SCRIPTS", os.path.join(os.path.dirname(__file__), "..", "..", "scripts")))
import plot_compare  # noqa: E402

NAN = float("nan")


def write_comparison(out, cells):
    """compare.h5 as `nnvmc compare` writes it, for `cells`: dicts of ansatz, molecule, status,
    error, energy_err, reliable, reference, label, curve (energies or None)."""
    n = len(cells)
    strings = {k: [c.get(k, d) for c in cells] for k, d in
               (("ansatz", ""), ("molecule", ""), ("status", "done"), ("laplacian", "forward"), ("optim", "adam"),
                ("dtype", "float64"), ("reason", ""), ("reference_label", ""))}
    strings["cell"] = [f"{c['ansatz']}__{c['molecule']}" for c in cells]
    with h5py.File(os.path.join(out, "compare.h5"), "w") as f:
        f.attrs["strings"] = json.dumps(strings)
        f.attrs["molecules"] = json.dumps(list(dict.fromkeys(c["molecule"] for c in cells)))
        f.attrs["chemical_accuracy"] = 0.0016
        cols = {"error": [c.get("error", NAN) for c in cells], "energy_err": [c.get("energy_err", NAN) for c in cells],
                "error_bar_reliable": [1.0 if c.get("reliable", True) else 0.0 for c in cells],
                "reference": [c.get("reference", -1.0) for c in cells],
                "train_seconds": [c.get("train_seconds", 1.0) for c in cells]}
        for k, v in cols.items():
            f["table/" + k] = np.asarray(v, dtype=float).reshape(n)
        for c, name in zip(cells, strings["cell"]):
            if c.get("curve") is not None:
                e = np.asarray(c["curve"], dtype=float)
                f[f"curves/{name}/energy"] = e
                f[f"curves/{name}/seconds"] = np.linspace(0.1, 1.0, len(e))


def legend_texts(fig):
    texts = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    for ax in fig.axes:
        if ax.get_legend():
            texts += [t.get_text() for t in ax.get_legend().get_texts()]
    return texts


def crosses(fig):
    return sum(1 for ax in fig.axes for line in ax.get_lines() if line.get_marker() == "x")


class PlotCompare(unittest.TestCase):
    def test_failed_cells_are_crosses_and_unreliable_error_bars_are_named_in_both_figures(self):
        with tempfile.TemporaryDirectory() as out:
            write_comparison(out, [
                dict(ansatz="fn", molecule="h2", error=0.01, energy_err=0.001, reference=-1.1745,
                     reference_label="exact at R=1.4 bohr", curve=[-1.0, -1.1, -1.16]),
                dict(ansatz="hf", molecule="h2", optim="none", error=0.03, energy_err=0.002, reliable=False,
                     reference=-1.1745, reference_label="exact at R=1.4 bohr"),
                dict(ansatz="broken", molecule="h2", status="failed", reference=-1.1745,
                     reference_label="exact at R=1.4 bohr"),
                dict(ansatz="fn", molecule="lih", error=0.004, energy_err=0.0005, reference=-8.0,
                     reference_label="CCSD(T)/cc-pvdz (nnvmc ccsd)", curve=[-7.9, -7.99]),
                dict(ansatz="hf", molecule="lih", optim="none", error=0.02, energy_err=0.001, reference=-8.0,
                     reference_label="CCSD(T)/cc-pvdz (nnvmc ccsd)"),
                dict(ansatz="broken", molecule="lih", status="failed", reference=-8.0,
                     reference_label="CCSD(T)/cc-pvdz (nnvmc ccsd)"),
            ])
            time_fig, errors_fig = plot_compare.figures(plot_compare.read(out))
        for fig in (time_fig, errors_fig):
            texts = legend_texts(fig)
            for expected in ("fn", "hf", "broken", "chemical accuracy (1.6 mEh)", "failed (report.md)"):
                self.assertIn(expected, texts)
            self.assertEqual(crosses(fig), 2)  # one per failed cell
        self.assertIn("error bar unreliable", legend_texts(time_fig))
        self.assertIn("error bar unreliable", legend_texts(errors_fig))
        # the unreliable cell (hf on h2) is the one hollow bar, and the one hollow point
        bars = [p for p in errors_fig.axes[0].patches if p.get_height() > 0]
        self.assertEqual(len(bars), 4)
        self.assertEqual(sum(1 for b in bars if b.get_facecolor()[3] == 0), 1)
        points = [l for ax in time_fig.axes for l in ax.get_lines() if l.get_marker() == "o"]
        self.assertEqual(sum(1 for l in points if l.get_markerfacecolor() == "none"), 1)
        titles = [ax.get_title() for ax in time_fig.axes]
        self.assertIn("h2: E_ref -1.1745 Eh\nexact at R=1.4 bohr", titles)
        self.assertIn("lih: E_ref -8.0000 Eh\nCCSD(T)/cc-pvdz (nnvmc ccsd)", titles)

    def test_a_training_curve_is_not_drawn_below_its_noise(self):
        # energies scattered ± 0.05 Eh about the reference: the running mean crosses it, and its
        # |E - E_ref| dipped to 1e-6 Eh on the log axis (a user audit)
        rng = np.random.default_rng(0)
        ref = -1.1745
        curve = ref + 0.05 * rng.standard_normal(400)
        with tempfile.TemporaryDirectory() as out:
            write_comparison(out, [dict(ansatz="fn", molecule="h2", error=0.002, energy_err=0.004, reference=ref,
                                        curve=list(curve))])
            time_fig, _ = plot_compare.figures(plot_compare.read(out))
        lines = [l for l in time_fig.axes[0].get_lines() if len(l.get_ydata()) == 400]
        self.assertEqual(len(lines), 1)
        _, se = plot_compare.running_mean(curve, 40)
        self.assertTrue(np.all(np.asarray(lines[0].get_ydata()) >= se - 1e-15))
        self.assertGreater(np.min(lines[0].get_ydata()), 1e-3)  # 0.05 / sqrt(40) = 8 mEh at most points

    def test_running_mean_and_its_standard_error(self):
        mean, se = plot_compare.running_mean([1.0, 3.0, 5.0, 7.0], 2)
        np.testing.assert_allclose(mean, [1.0, 2.0, 4.0, 6.0])
        np.testing.assert_allclose(se, [0.0, 1.0, 1.0, 1.0])  # std of two values 2 apart: sqrt(2), / sqrt(2)

    def test_a_comparison_where_no_cell_finished_says_so(self):
        with tempfile.TemporaryDirectory() as out:
            write_comparison(out, [dict(ansatz="broken", molecule="he", status="failed", reference=-2.9037)])
            for fig in plot_compare.figures(plot_compare.read(out)):
                shown = [t.get_text() for ax in fig.axes for t in ax.texts]
                self.assertIn("no finished cell", shown)
                self.assertNotIn("error bar unreliable", legend_texts(fig))

    def test_a_molecule_without_a_reference_says_so_and_a_lost_time_still_plots(self):
        with tempfile.TemporaryDirectory() as out:
            write_comparison(out, [dict(ansatz="fn", molecule="oh", energy_err=0.01, reference=NAN, curve=[-75.0]),
                                   dict(ansatz="fn", molecule="h2", error=0.01, energy_err=0.001, reference=-1.17,
                                        train_seconds=NAN)])
            time_fig, errors_fig = plot_compare.figures(plot_compare.read(out))
        shown = [t.get_text() for ax in time_fig.axes for t in ax.texts]
        self.assertIn("no reference: errors not plotted", shown)
        self.assertNotIn("no finished cell", shown)
        h2_points = [line for line in time_fig.axes[1].get_lines() if line.get_marker() == "o"]
        self.assertEqual(len(h2_points), 1)
        self.assertEqual(list(h2_points[0].get_xdata()), [0.0])  # (at 0, not at NaN where it vanished)

    def test_a_directory_without_a_comparison_is_refused_by_name(self):
        script = os.path.join(os.path.dirname(plot_compare.__file__), "plot_compare.py")
        with tempfile.TemporaryDirectory() as out:
            r = subprocess.run([sys.executable, script, out], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("no compare.h5 there", r.stderr)


if __name__ == "__main__":
    unittest.main()
