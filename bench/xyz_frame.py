#!/usr/bin/env python3
"""Writes frame K (1-based) of a multi-frame XYZ file (e.g. bench/molecules/water_clusters.xyz,
frame n = (H2O)n) to OUT.   usage: xyz_frame.py XYZ K OUT"""
import sys

lines = open(sys.argv[1]).read().splitlines()
i = k = 0
while i < len(lines):
    m = int(lines[i].split()[0])
    if k + 1 == int(sys.argv[2]):
        open(sys.argv[3], "w").write("\n".join(lines[i:i + 2 + m]) + "\n")
        sys.exit(0)
    i += 2 + m
    k += 1
sys.exit(f"{sys.argv[1]}: no frame {sys.argv[2]} (it has {k})")
