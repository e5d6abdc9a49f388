#!/usr/bin/env python3
"""For pairs.sh's output: per task, the median of after / before over adjacent runs (paired), and
the medians and bests of each tree."""
import csv, os, statistics, sys
d = sys.argv[1]
for task in ["alltoallv", "alltoall", "allreduce", "gatherv", "scatterv"]:
    pairs, times = {}, {}
    for r in range(1, 1000):
        files = {lab: f"{d}/{task}_{lab}_r{r}.csv" for lab in ["before", "after"]}
        if not all(os.path.exists(f) for f in files.values()):
            continue
        rows = {}
        for lab, f in files.items():
            for x in csv.DictReader(open(f)):
                assert x["wrong"] == "0", f
                rows.setdefault(int(x["bytes"]), {})[lab] = float(x["time_us"])
        for b, t in rows.items():
            pairs.setdefault(b, []).append(t["after"] / t["before"])
            for lab in t:
                times.setdefault(b, {}).setdefault(lab, []).append(t[lab])
    for b in sorted(pairs):
        t = times[b]
        print(f"{task:10} {b:6} B  paired after/before {statistics.median(pairs[b]):.2f} over {len(pairs[b])}"
              f"  median {statistics.median(t['before']):.2f} -> {statistics.median(t['after']):.2f} us"
              f"  best {min(t['before']):.2f} -> {min(t['after']):.2f} us")
