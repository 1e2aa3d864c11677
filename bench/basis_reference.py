#!/usr/bin/env python3
"""RHF reference energies of the shipped basis sets from Psi4 (Debian `psi4`): one CSV row per
molecule and basis, for tests/scf/data/basis_reference.csv.

Psi4 takes each basis's pure/Cartesian choice from its own basis file (no `puream` is set), which
is the convention nnvmc's data/basis files follow (6-31G*, 6-31G**, 6-31+G* Cartesian; the rest
pure), so the rows check the basis data and that choice together.
usage: bench/basis_reference.py MOLECULE.yaml:BASIS[,BASIS...] ...   (writes CSV rows to stdout)
e.g.   bench/basis_reference.py configs/molecules/h2o.yaml:def2-svp,aug-cc-pvdz tests/scf/data/hcl.yaml:6-31g**"""
import os, re, subprocess, sys, tempfile

import yaml  # python3-yaml


def psi4_rhf(molecule, basis):
    d = yaml.safe_load(open(molecule))
    geom = "\n".join(f"{s} {x:.10f} {y:.10f} {z:.10f}" for s, x, y, z in d["atoms"])
    inp = (f"memory 4 GB\nmolecule m {{\nunits {d.get('units', 'bohr')}\n{d.get('charge', 0)} {d.get('spin', 0) + 1}\n"
           f"{geom}\nsymmetry c1\nno_reorient\nno_com\n}}\n"
           f"set basis {basis}\nset scf_type pk\nset e_convergence 1e-11\nset d_convergence 1e-10\n"
           "energy('scf')\n")
    with tempfile.TemporaryDirectory() as tmp:
        open(os.path.join(tmp, "in.dat"), "w").write(inp)
        subprocess.run(["psi4", "in.dat", "-n", "1"], cwd=tmp, capture_output=True, text=True, env=dict(os.environ, PSI_SCRATCH=tmp))
        out = open(os.path.join(tmp, "in.out")).read() if os.path.exists(os.path.join(tmp, "in.out")) else ""
    energy = re.search(r"Total Energy =\s+(-?\d+\.\d+)", out)
    n_basis = re.search(r"Number of basis function:\s+(\d+)", out)
    if "exiting successfully" not in out or not energy or not n_basis:
        sys.exit(f"psi4 failed on {molecule} {basis}:\n" + out[-2000:])
    return int(n_basis.group(1)), float(energy.group(1))


print("molecule,basis,n_basis,e_rhf")
for arg in sys.argv[1:]:
    molecule, bases = arg.rsplit(":", 1)
    name = os.path.splitext(os.path.basename(molecule))[0]
    for basis in bases.split(","):
        n, e = psi4_rhf(molecule, basis)
        print(f"{name},{basis},{n},{e:.10f}", flush=True)
