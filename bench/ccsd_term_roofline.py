#!/usr/bin/env python3
"""Places every CCSD term of an `nnvmc ccsd --json` run on a roofline (issue 17: "every term at
>= 40 % of measured DGEMM on the GPU, or a stated reason").

Per term: FLOPs and operand bytes per iteration (the contractions' distinct operand elements and
outputs, each counted once: the least traffic any implementation has), their ratio (arithmetic
intensity, FLOP/byte), the most a device with GEMM peak P and memory bandwidth B can reach at
that intensity, min(P, I*B), as a fraction of P, and, when the run itself ran on that device,
the fraction it reached. A term whose attainable fraction is below the 40 % goal is
memory-bound by its shape: that is its stated reason, and the number to compare it with.

usage: bench/ccsd_term_roofline.py RUN.json [--peak-tflops 47.7] [--bandwidth-tbs 4.8]
                                             [--measured] [--goal 0.4]
  --peak-tflops / --bandwidth-tbs: the device (defaults: the H200's DGEMM measured on the lent
    machine, 47.7 TFLOP/s, and its HBM3e bandwidth, 4.8 TB/s as specified: an upper bound, so
    the attainable fractions are upper bounds too)
  --measured: also print the fraction of the peak each term reached in this run (only
    meaningful when the run ran on that device)
"""
import argparse
import json
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("--peak-tflops", type=float, default=47.7)
    ap.add_argument("--bandwidth-tbs", type=float, default=4.8)
    ap.add_argument("--measured", action="store_true")
    ap.add_argument("--goal", type=float, default=0.4)
    a = ap.parse_args()
    j = json.load(open(a.run))
    it = max(int(j.get("iterations", 1)), 1)
    peak, bw = a.peak_tflops * 1e12, a.bandwidth_tbs * 1e12
    ridge = peak / bw
    print(f"# {a.run}: n_basis {j['n_basis']}, n_cholesky {j['n_cholesky']}, frozen {j['n_frozen']}, "
          f"{it} iteration(s); device peak {a.peak_tflops} TFLOP/s, bandwidth {a.bandwidth_tbs} TB/s "
          f"(ridge {ridge:.1f} FLOP/byte)")
    cols = f"{'term':<11} {'GFLOP/it':>9} {'MB/it':>9} {'FLOP/B':>7} {'attainable':>10}"
    print(cols + (f" {'measured':>9}" if a.measured else "") + "  verdict")
    terms = [(t, s) for t, s in j["terms"].items() if s.get("flops", 0) > 0]
    total_f = sum(s["flops"] for _, s in terms)
    bound_f = 0.0
    for t, s in sorted(terms, key=lambda kv: -kv[1]["flops"]):
        f, b = s["flops"] / it, s.get("operand_bytes", 0) / it
        if b <= 0:
            print(f"{t:<11} {f / 1e9:9.2f} {'?':>9}  (no operand_bytes in this JSON: an older nnvmc)")
            continue
        inten = f / b
        attain = min(1.0, inten / ridge)
        line = f"{t:<11} {f / 1e9:9.2f} {b / 1e6:9.1f} {inten:7.1f} {attain:10.0%}"
        if a.measured:
            sec = s["seconds"] / it
            line += f" {f / sec / peak if sec > 0 else 0:9.1%}"
        if attain < a.goal:
            bound_f += s["flops"]
            line += f"  memory-bound: at most {attain:.0%} of DGEMM at {inten:.1f} FLOP/byte"
        else:
            line += f"  can reach {a.goal:.0%}"
        print(line)
    print(f"# memory-bound terms (attainable < {a.goal:.0%}): {bound_f / max(total_f, 1):.1%} of the iteration's GEMM FLOPs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
