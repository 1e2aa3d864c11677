"""Helpers of the Psi4 peer scripts (psi4_hf.py, psi4_ccsd_periter.py, psi4_triples.py), so that
they run from a clone of this repository alone."""
import os
import sys


def read_molecule(path, frame=1):
    """(units, charge, spin, [(symbol, x, y, z), ...]) of a molecule file: an .xyz file (angstrom;
    `frame` counts from 1 in a multi-frame file) or a project molecule .yaml (units, charge, spin,
    atoms)."""
    if path.endswith(".xyz"):
        lines = open(path).read().splitlines()
        start, k = 0, 1
        while start < len(lines) and lines[start].strip():
            count = int(lines[start].split()[0])
            if k == frame:
                rows = [line.split() for line in lines[start + 2:start + 2 + count]]
                return "angstrom", 0, 0, [(r[0], float(r[1]), float(r[2]), float(r[3])) for r in rows]
            start, k = start + 2 + count, k + 1
        sys.exit(f"{path}: has no frame {frame}")
    import yaml  # python3-yaml
    spec = yaml.safe_load(open(path))
    return spec.get("units", "bohr"), spec.get("charge", 0), spec.get("spin", 0), [tuple(a) for a in spec["atoms"]]


def system_blas():
    """The library the system's libblas.so.3 is (Debian alternatives): Psi4's BLAS, which decides
    whether its timings are fair (OpenBLAS) or not (the reference BLAS); 'unknown' if not found."""
    for link in ("/etc/alternatives/libblas.so.3-x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu/libblas.so.3"):
        if os.path.exists(link):
            return os.path.realpath(link)
    return "unknown"
