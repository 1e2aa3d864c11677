#!/usr/bin/env python3
"""Batched LU of the log-determinants on a CUDA device: libtorch's backends side by side.

nnvmc's VMC runs on CUDA prefer cuSOLVER / cuBLAS batched LU (src/train/setup.cpp,
use_cuda_device): libtorch's default sends a batch of more than 16 matrices larger than 16 x 16 to
MAGMA, which synchronises the device around the call, so a CUDA graph capture of the MH step or
the local energy fails for molecules with more than 16 electrons. This measures, for the matrix
sizes of LiH ... C4H4 and walker x determinant batches, the time of torch.linalg.lu_factor_ex per
backend (median of 20, after warm-up), whether each can be captured in a CUDA graph, and that
they agree. Run on the device machine (its image has torch); on a machine without CUDA it says so.

  python3 bench/lu_backends.py [--batches 1024,32768] [--sizes 4,10,18,28,42]
"""
import argparse
import statistics
import sys
import time

import torch


def timed(fn, reps=20):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def capturable(a):
    """Whether lu_factor_ex of `a` can be captured in a CUDA graph with the current backend."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        torch.linalg.lu_factor_ex(a)  # warm-up on the side stream
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.stream(torch.cuda.Stream()):  # restored even when the capture fails
            with torch.cuda.graph(g):
                torch.linalg.lu_factor_ex(a)
        g.replay()
        torch.cuda.synchronize()
        return "yes"
    except Exception as e:  # noqa: BLE001 - report any refusal
        torch.cuda.synchronize()
        return "no (" + str(e).splitlines()[0][:60] + ")"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", default="1024,32768")
    p.add_argument("--sizes", default="4,10,18,28,42")
    p.add_argument("--dtype", default="float64")
    a = p.parse_args()
    if not torch.cuda.is_available():
        print("lu_backends: no CUDA device here (torch %s); nothing measured" % torch.__version__)
        return 0
    dtype = getattr(torch, a.dtype)
    print("torch %s, %s, %s" % (torch.__version__, torch.cuda.get_device_name(0), a.dtype))
    print("%7s %4s  %12s %12s %12s  %-8s %-8s  %s" % ("batch", "n", "default ms", "cusolver ms", "magma ms",
                                                        "graph(d)", "graph(c)", "max |LU_c - LU_d|"))
    backends = ["default", "cusolver", "magma"]
    for batch in map(int, a.batches.split(",")):
        for n in map(int, a.sizes.split(",")):
            x = torch.randn(batch, n, n, device="cuda", dtype=dtype) + n * torch.eye(n, device="cuda", dtype=dtype)
            ms, lu, graph = {}, {}, {}
            for b in backends:
                try:
                    torch.backends.cuda.preferred_linalg_library(b)
                    ms[b] = "%.3f" % (1e3 * timed(lambda: torch.linalg.lu_factor_ex(x)))
                    lu[b] = torch.linalg.lu_factor_ex(x)[0]
                except Exception as e:  # noqa: BLE001 - a backend missing from this build
                    ms[b] = "n/a (" + str(e).splitlines()[0][:40] + ")"
            for b in ("cusolver", "default"):  # the capture expected to fail last
                torch.backends.cuda.preferred_linalg_library(b)
                graph[b] = capturable(x)
            diff = (lu["cusolver"] - lu["default"]).abs().max().item() if "cusolver" in lu and "default" in lu else float("nan")
            print("%7d %4d  %12s %12s %12s  %-8s %-8s  %.1e" % (batch, n, ms["default"], ms["cusolver"], ms["magma"],
                                                              graph["default"][:3], graph["cusolver"][:3], diff))
            for b in ("default", "cusolver"):
                if graph[b] != "yes":
                    print("        graph capture with %s: %s" % (b, graph[b]))
            sys.stdout.flush()
    torch.backends.cuda.preferred_linalg_library("default")
    return 0


if __name__ == "__main__":
    sys.exit(main())
