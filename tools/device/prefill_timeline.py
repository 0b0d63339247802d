#!/usr/bin/env python3
"""Where a profiled run's wall time goes on the device, from `npusim run --profile --runs N --trace
FILE`: per run, the device span (first kernel start to last kernel end), the time from the first
enqueue to the first kernel start, the sum of kernel spans, and the largest gaps between kernels
with the kernels around them.   tools/device/prefill_timeline.py TRACE.json RUNS"""
import json
import sys

d = json.load(open(sys.argv[1]))
runs = int(sys.argv[2])
ev = [e for e in (d["traceEvents"] if isinstance(d, dict) else d) if e.get("ph") == "X" and "device_us" in e.get("args", {})]
ev.sort(key=lambda e: e["ts"])
per = len(ev) // runs
for r in range(runs):
    xs = ev[r * per:(r + 1) * per]
    t0, t1 = xs[0]["ts"], max(e["ts"] + e["dur"] for e in xs)
    busy = sum(e["dur"] for e in xs)
    gaps = []
    for a, b in zip(xs, xs[1:]):
        g = b["ts"] - (a["ts"] + a["dur"])
        gaps.append((g, a["name"], b["name"]))
    host = sum(e["args"].get("host_us", 0) for e in xs)
    print(f"run {r}: device span {t1 - t0:.0f} us, kernels {busy:.0f} us, gaps {sum(g for g, _, _ in gaps):.0f} us "
          f"(> 20 us: {sum(g for g, _, _ in gaps if g > 20):.0f} us in {sum(1 for g, _, _ in gaps if g > 20)}), host enqueue {host:.0f} us")
    for g, a, b in sorted(gaps, reverse=True)[:6]:
        print(f"   gap {g:8.0f} us after {a[:40]:40s} before {b[:40]}")
