#!/usr/bin/env python3
"""Psi4 (Debian `psi4`, conventional RHF-CCSD, ccenergy) wall time per CCSD iteration.

usage: psi4_ccsd_periter.py MOLECULE.{xyz,yaml} BASIS [--frame K] [--threads N] [--rconv R1,R2]

Psi4 prints no per-iteration timing, so it is run twice with loose amplitude convergence
thresholds R1 > R2 (it stops after I1 < I2 iterations; a capped `maxiter` cannot be used: Psi4
1.3.2 hangs at exit after a non-converged ccenergy) and the time per iteration is the wall-time
difference divided by I2 − I1; SCF, integral transformation and set-up cancel. Prints JSON.
"""
import argparse, json, os, re, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tools"))
from psi4_reference import read_molecule  # noqa: E402  (geometry reader of the shared tool)


def run(geom_block, basis, rconv, threads):
    inp = (f"memory 16 GB\nmolecule m {{\n{geom_block}\nsymmetry c1\nno_reorient\nno_com\n}}\n"
           f"set basis {basis}\nset puream true\nset scf_type pk\nset freeze_core false\n"
           f"set scf e_convergence 1e-10\nset scf d_convergence 1e-9\n"
           f"set ccenergy e_convergence 1\nset ccenergy r_convergence {rconv}\nenergy('ccsd')\n")
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, "in.dat"), "w").write(inp)
        t0 = time.time()
        subprocess.run(["psi4", "in.dat", "-n", str(threads)], cwd=d, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=24 * 3600)
        wall = time.time() - t0
        out = open(os.path.join(d, "in.out")).read()
    if "exiting successfully" not in out:
        sys.exit("psi4 failed:\n" + out[-2000:])
    its = re.findall(r"^\s+(\d+)\s+-?\d+\.\d+\s+\d\.\d+e[-+]\d+", out, re.M)
    if not its:
        sys.exit("psi4 did not reach the CCSD iterations:\n" + out[-2000:])
    return wall, int(its[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("molecule"); ap.add_argument("basis")
    ap.add_argument("--frame", type=int, default=1); ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rconv", default="1e-1,1e-3")
    a = ap.parse_args()
    k1, k2 = a.rconv.split(",")
    units, charge, spin, atoms = read_molecule(a.molecule, a.frame)
    geom = f"units {units}\n{charge} {spin + 1}\n" + "\n".join(f"{s} {x:.10f} {y:.10f} {z:.10f}" for s, x, y, z in atoms)
    w1, i1 = run(geom, a.basis, k1, a.threads)
    w2, i2 = run(geom, a.basis, k2, a.threads)
    print(json.dumps({"wall_seconds": [round(w1, 2), round(w2, 2)], "iterations": [i1, i2],
                      "seconds_per_iteration": round((w2 - w1) / (i2 - i1), 3)}))


if __name__ == "__main__":
    main()
