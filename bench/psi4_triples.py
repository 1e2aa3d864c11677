#!/usr/bin/env python3
"""Psi4 (Debian `psi4`) wall time of the (T) correction: the same CCSD run twice, once with
energy('ccsd') and once with energy('ccsd(t)'); the (T) time is the difference of the two wall
times (SCF, integrals and the CCSD iterations cancel). Conventional integrals run ccenergy +
cctriples; --cholesky TAU runs fnocc's CD-CCSD(T).

usage: psi4_triples.py MOLECULE.{xyz,yaml} BASIS [--frame K] [--threads N] [--cholesky TAU]
                       [--frozen-core] [--repeats R]

Prints JSON: per repeat the two wall times and their difference, the median (T) seconds, E(T) and
E(CCSD(T)), and the BLAS and OpenBLAS core Psi4 ran on (see psi4_ccsd_periter.openblas_env).
"""
import argparse, json, os, re, statistics, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from psi4_ccsd_periter import openblas_env  # noqa: E402
from psi4_common import read_molecule, system_blas  # noqa: E402


def run(geom_block, basis, method, threads, cholesky, frozen, env):
    """One Psi4 run; returns (wall seconds, output text)."""
    opts = [f"basis {basis}", "puream true", f"freeze_core {'true' if frozen else 'false'}",
            "scf e_convergence 1e-10", "scf d_convergence 1e-9"]
    if cholesky:
        opts += ["scf_type cd", "cc_type cd", "qc_module fnocc", f"cholesky_tolerance {cholesky}",
                 "fnocc e_convergence 1e-8", "fnocc r_convergence 1e-7"]
    else:
        opts += ["scf_type pk", "qc_module ccenergy", "ccenergy e_convergence 1e-8", "ccenergy r_convergence 1e-7"]
    inp = (f"memory 16 GB\nmolecule m {{\n{geom_block}\nsymmetry c1\nno_reorient\nno_com\n}}\n"
           + "".join(f"set {o}\n" for o in opts) + f"energy('{method}')\n"
           + "print_out('\\nE(CCSD) %.12f\\n' % variable('CCSD TOTAL ENERGY'))\n"
           + ("print_out('\\nE(T) %.12f\\n' % variable('(T) CORRECTION ENERGY'))\n" if "(t)" in method else ""))
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, "in.dat"), "w").write(inp)
        t0 = time.time()
        subprocess.run(["psi4", "in.dat", "-n", str(threads)], cwd=d, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=24 * 3600, env=env)
        wall = time.time() - t0
        out = open(os.path.join(d, "in.out")).read()
    if "exiting successfully" not in out:
        sys.exit(f"psi4 {method} failed:\n" + out[-2000:])
    return wall, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("molecule"); ap.add_argument("basis")
    ap.add_argument("--frame", type=int, default=1); ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cholesky", type=float, default=None, help="fnocc CD-CCSD(T) with this threshold")
    ap.add_argument("--frozen-core", action="store_true")
    ap.add_argument("--repeats", type=int, default=1)
    a = ap.parse_args()
    units, charge, spin, atoms = read_molecule(a.molecule, a.frame)
    geom = f"units {units}\n{charge} {spin + 1}\n" + "\n".join(f"{s} {x:.10f} {y:.10f} {z:.10f}" for s, x, y, z in atoms)
    env, core = openblas_env(a.threads)
    rows, e_t, e_ccsd = [], None, None
    for _ in range(a.repeats):  # interleaved: ccsd, ccsd(t), ccsd, ccsd(t), ...
        w0, out0 = run(geom, a.basis, "ccsd", a.threads, a.cholesky, a.frozen_core, env)
        w1, out1 = run(geom, a.basis, "ccsd(t)", a.threads, a.cholesky, a.frozen_core, env)
        rows.append({"ccsd": round(w0, 2), "ccsd_t": round(w1, 2), "triples": round(w1 - w0, 2)})
        e_t = float(re.findall(r"^E\(T\) (\S+)", out1, re.M)[-1])
        e_ccsd = float(re.findall(r"^E\(CCSD\) (\S+)", out1, re.M)[-1])
    print(json.dumps({"program": "psi4 fnocc CD-CCSD(T)" if a.cholesky else "psi4 ccenergy+cctriples",
                      "runs": rows, "seconds_triples": round(statistics.median(r["triples"] for r in rows), 2),
                      "e_ccsd": e_ccsd, "e_t": e_t, "threads": a.threads, "blas": system_blas(), "openblas_core": core}))


if __name__ == "__main__":
    main()
