#!/usr/bin/env python3
"""Psi4 (Debian `psi4`) wall time per CCSD iteration: conventional RHF-CCSD (ccenergy) or, with
--cholesky TAU, Cholesky-decomposed CD-CCSD (fnocc, scf_type cd, cholesky_tolerance TAU).

usage: psi4_ccsd_periter.py MOLECULE.{xyz,yaml} BASIS [--frame K] [--threads N] [--rconv R1,R2]
                            [--cholesky TAU] [--frozen-core]

Psi4 prints no usable per-iteration timing (fnocc's column is in whole seconds), so it is run
twice with loose amplitude convergence thresholds R1 > R2 (it stops after I1 < I2 iterations; a
capped `maxiter` cannot be used: Psi4 1.3.2 hangs at exit after a non-converged ccenergy) and the
time per iteration is the wall-time difference divided by I2 − I1; SCF, integral transformation
and set-up cancel. Prints JSON, including the BLAS the system libblas.so.3 resolves to (Psi4's
timings are only fair with an optimised one: apt-get install libopenblas0-pthread).
"""
import argparse, json, os, re, resource, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from psi4_common import read_molecule, system_blas  # noqa: E402


def openblas_env(threads):
    """Environment for Psi4's OpenBLAS: its thread pool pinned to `threads`, and its core type set
    when OpenBLAS does not know this CPU. (Debian's OpenBLAS 0.3.21 does not know e.g. Emerald
    Rapids, family 6 model 207, and falls back to its SSE3 'Prescott' kernels: DGEMM 12-15
    GFLOP/s instead of 76-78 with OPENBLAS_CORETYPE=Cooperlake; a user of such a machine sets the
    core type, so the comparison does too.) A user's own OPENBLAS_CORETYPE is kept.
    Returns (env, core name OpenBLAS then uses)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))

    def core(e):
        probe = ("import ctypes; l = ctypes.CDLL('libblas.so.3'); f = l.openblas_get_corename; "
                 "f.restype = ctypes.c_char_p; print(f().decode())")
        r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=e)
        return r.stdout.strip() if r.returncode == 0 else "not OpenBLAS"

    name = core(env)
    if "OPENBLAS_CORETYPE" not in os.environ and name.lower() in ("prescott", "core2", "penryn", "dunnington", "nehalem", "katmai"):
        flags = set(open("/proc/cpuinfo").read().split())
        for want, corename in (({"avx512f", "avx512_bf16"}, "Cooperlake"), ({"avx512f"}, "SkylakeX"), ({"avx2", "fma"}, "Haswell")):
            if want <= flags:
                env["OPENBLAS_CORETYPE"] = corename
                name = core(env)
                break
    return env, name


def run(geom_block, basis, rconv, threads, cholesky, frozen, env):
    opts = [f"basis {basis}", "puream true", f"freeze_core {'true' if frozen else 'false'}",
            "scf e_convergence 1e-10", "scf d_convergence 1e-9"]
    if cholesky:
        opts += ["scf_type cd", "cc_type cd", f"cholesky_tolerance {cholesky}",
                 "fnocc e_convergence 1", f"fnocc r_convergence {rconv}"]
    else:
        opts += ["scf_type pk", "ccenergy e_convergence 1", f"ccenergy r_convergence {rconv}"]
    inp = (f"memory 16 GB\nmolecule m {{\n{geom_block}\nsymmetry c1\nno_reorient\nno_com\n}}\n"
           + "".join(f"set {o}\n" for o in opts) + "energy('ccsd')\n")
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, "in.dat"), "w").write(inp)
        t0 = time.time()
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(["psi4", "in.dat", "-n", str(threads)], cwd=d, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=24 * 3600, env=env)
        wall = time.time() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        user, sys_ = r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime
        out = open(os.path.join(d, "in.out")).read()
    if "exiting successfully" not in out:
        sys.exit("psi4 failed:\n" + out[-2000:])
    if cholesky:  # fnocc: "Iter DIIS Energy d(Energy) |d(T)| time"
        its = re.findall(r"^\s+(\d+)\s+\d+\s+\d+\s+-?\d+\.\d+\s+-?\d+\.\d+\s+\d+\.\d+\s+\d+\s*$", out, re.M)
    else:
        its = re.findall(r"^\s+(\d+)\s+-?\d+\.\d+\s+\d\.\d+e[-+]\d+", out, re.M)
    if not its:
        sys.exit("psi4 did not reach the CCSD iterations:\n" + out[-2000:])
    return wall, int(its[-1]), user, sys_


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("molecule"); ap.add_argument("basis")
    ap.add_argument("--frame", type=int, default=1); ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rconv", default="1e-1,1e-3")
    ap.add_argument("--cholesky", type=float, default=None, help="fnocc CD-CCSD with this threshold")
    ap.add_argument("--frozen-core", action="store_true")
    a = ap.parse_args()
    k1, k2 = a.rconv.split(",")
    units, charge, spin, atoms = read_molecule(a.molecule, a.frame)
    geom = f"units {units}\n{charge} {spin + 1}\n" + "\n".join(f"{s} {x:.10f} {y:.10f} {z:.10f}" for s, x, y, z in atoms)
    env, core = openblas_env(a.threads)
    w1, i1, u1, s1 = run(geom, a.basis, k1, a.threads, a.cholesky, a.frozen_core, env)
    w2, i2, u2, s2 = run(geom, a.basis, k2, a.threads, a.cholesky, a.frozen_core, env)
    di = i2 - i1

    def per(seconds):  # None where the difference is below the noise of the two runs (tiny systems)
        return round(seconds / di, 3) if di > 0 and seconds > 0 else None

    if per(w2 - w1) is None or per(u2 + s2 - u1 - s1) is None:
        print(f"warning: a per-iteration time (wall or CPU) is below the noise of the two runs ({w1:.2f} s, {w2:.2f} s "
              f"for {i1} and {i2} iterations): each one not above 0 is reported as null; use a larger system",
              file=sys.stderr)
    print(json.dumps({"program": "fnocc CD-CCSD" if a.cholesky else "ccenergy", "wall_seconds": [round(w1, 2), round(w2, 2)],
                      "iterations": [i1, i2], "seconds_per_iteration": per(w2 - w1),
                      "user_per_iteration": per(u2 - u1), "sys_per_iteration": per(s2 - s1),
                      "cpu_per_iteration": per(u2 + s2 - u1 - s1), "blas": system_blas(),
                      "openblas_core": core}))


if __name__ == "__main__":
    main()
