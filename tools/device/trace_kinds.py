#!/usr/bin/env python3
"""Device time of a decode step by kernel, from `npusim generate --profile --trace FILE` (Perfetto
JSON): launches, device microseconds and share per kernel label (its kind: linear_group, rope_kv,
...; before issue 41 the executor's merged kinds, e.g. rmsnorm+linear+linear+linear), largest first.   tools/device/trace_kinds.py TRACE.json [TRACE2.json ...]"""
import collections
import json
import sys

for path in sys.argv[1:]:
    d = json.load(open(path))
    ev = [e for e in (d["traceEvents"] if isinstance(d, dict) else d) if e.get("ph") == "X" and "device_us" in e.get("args", {})]
    by = collections.defaultdict(lambda: [0, 0.0])
    for e in ev:
        label = e["name"].split(" ", 1)[-1]
        by[label][0] += 1
        by[label][1] += e["args"]["device_us"]
    # One embedding launch per step (its label carries the kernel: "embedding (gather_rows)").
    steps = max(sum(n for label, (n, _) in by.items() if label.split(" ")[0] == "embedding"), 1)
    total = sum(v[1] for v in by.values())
    print(f"{path}: {steps} step(s); per step {len(ev) / steps:.0f} launches, {total / steps:.0f} us of device time")
    for label, (n, us) in sorted(by.items(), key=lambda kv: -kv[1][1]):
        print(f"  {label:40s} {n / steps:5.0f} {us / steps:9.1f} us {100 * us / total:5.1f}%  {us / n:7.1f} us each")
