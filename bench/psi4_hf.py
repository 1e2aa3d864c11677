#!/usr/bin/env python3
"""RHF or UHF with Psi4 (Debian `psi4`, system BLAS) on one molecule, as its users run it: --scf-type pk
(exact integrals), cd (Cholesky, --cholesky TAU) or df (its default, cc-pVDZ-JKFIT fitting).
Prints one JSON line: energy, iterations, wall seconds of the psi4 process, its BLAS.
--df-basis names the auxiliary basis of df (def2-qzvpp-jkfit is Psi4's name for def2-universal-JKFIT,
nnvmc scf --df's default); --reference uhf with --multiplicity M for open shells; --e-conv/--d-conv
tighten the convergence for comparisons below 1e-8 Eh.
usage: bench/psi4_hf.py MOLECULE.xyz|.yaml [--basis cc-pvdz] [--scf-type pk|cd|df] [--cholesky 1e-5] [--threads 1]
       [--df-basis NAME] [--reference rhf|uhf] [--charge 0] [--multiplicity 1] [--e-conv 1e-8] [--d-conv 1e-6]"""
import argparse, json, os, re, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from psi4_common import read_molecule, system_blas  # noqa: E402
from psi4_ccsd_periter import openblas_env  # noqa: E402  (OpenBLAS threads and core type)

ap = argparse.ArgumentParser()
ap.add_argument("xyz")
ap.add_argument("--basis", default="cc-pvdz")
ap.add_argument("--scf-type", default="pk")
ap.add_argument("--cholesky", type=float, default=1e-5)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--memory-gb", type=int, default=8)
ap.add_argument("--df-basis", default="")
ap.add_argument("--reference", default="rhf")
ap.add_argument("--charge", type=int, default=0)
ap.add_argument("--multiplicity", type=int, default=1)
ap.add_argument("--e-conv", type=float, default=1e-8)
ap.add_argument("--d-conv", type=float, default=1e-6)
a = ap.parse_args()
units, _, _, rows = read_molecule(a.xyz)
atoms = "\n".join("%s %.10f %.10f %.10f" % (sym, x, y, z) for sym, x, y, z in rows)
extra = f"  cholesky_tolerance {a.cholesky}\n" if a.scf_type == "cd" else ""
if a.df_basis:
    extra += f"  df_basis_scf {a.df_basis}\n"
inp = (f"memory {a.memory_gb} gb\nmolecule {{\n{a.charge} {a.multiplicity}\n{atoms}\nunits {units}\nsymmetry c1\nno_reorient\nno_com\n}}\n"
       f"set {{\n  basis {a.basis}\n  scf_type {a.scf_type}\n  reference {a.reference}\n"
       f"  e_convergence {a.e_conv}\n  d_convergence {a.d_conv}\n{extra}}}\n"
       "energy('scf')\n")
with tempfile.TemporaryDirectory() as d:
    open(os.path.join(d, "in.dat"), "w").write(inp)
    env, core = openblas_env(a.threads)
    env.update(MKL_NUM_THREADS=str(a.threads), PSI_SCRATCH=d)
    t0 = time.perf_counter()
    subprocess.run(["psi4", "in.dat", "-n", str(a.threads)], cwd=d, capture_output=True, text=True,
                   stdin=subprocess.DEVNULL, timeout=6 * 3600, env=env)
    dt = time.perf_counter() - t0
    out = open(os.path.join(d, "in.out")).read() if os.path.exists(os.path.join(d, "in.out")) else ""
m = re.search(r"Total Energy =\s+(-?\d+\.\d+)", out)
if not m:
    sys.exit("psi4 failed:\n" + out[-2000:])
iters = re.findall(r"@(?:DF-)?[RU]HF iter\s+(\d+):", out)
print(json.dumps({"program": "psi4", "scf_type": a.scf_type, "df_basis": a.df_basis or None, "cholesky": a.cholesky if a.scf_type == "cd" else None,
                  "e_hf": float(m.group(1)), "iterations": int(iters[-1]) if iters else None,
                  "seconds": round(dt, 2), "blas": system_blas(), "openblas_core": core}))
