#!/usr/bin/env python3
"""Sums an `ncu --csv --metrics gpu__time_duration.sum` log per kernel name: count,
total and mean microseconds, share of the total. Usage: summarize_ncu.py ncu.csv"""
import csv
import sys
from collections import defaultdict


def main(path):
    rows = []
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    for rec in csv.DictReader(lines):
        if rec.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(rec["Metric Value"].replace(",", ""))
        unit = rec.get("Metric Unit", "ns")
        scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}.get(unit, 1e-3)
        name = rec["Kernel Name"].split("(")[0].split("<")[0]
        rows.append((name, value * scale))
    total = sum(t for _, t in rows)
    agg = defaultdict(lambda: [0, 0.0])
    for name, t in rows:
        agg[name][0] += 1
        agg[name][1] += t
    print(f"{len(rows)} kernels, {total:.1f} us of kernel time")
    print(f"{'kernel':40s} {'count':>6s} {'total us':>10s} {'mean us':>9s} {'share':>6s}")
    for name, (n, t) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
        print(f"{name[:40]:40s} {n:6d} {t:10.1f} {t / n:9.2f} {100 * t / max(total, 1e-9):5.1f}%")


if __name__ == "__main__":
    main(sys.argv[1])
