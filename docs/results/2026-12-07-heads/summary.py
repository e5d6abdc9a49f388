#!/usr/bin/env python3
"""Medians and bests over the alternating rounds of ab.sh: time (us) per size, before and after,
per task. This VM's cross-core latency flips between two levels from one run to the next, so the
best round shows each tree in the fast state and the median mixes the two."""
import csv, glob, statistics, sys
from pathlib import Path
here = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent / "ab")
for task in ["alltoallv", "alltoall", "gatherv", "scatterv", "allreduce"]:
    cells = {}
    for label in ["before", "after"]:
        for f in sorted(glob.glob(str(here / f"{task}_{label}_r*.csv"))):
            for row in csv.DictReader(open(f)):
                assert row["wrong"] == "0", f
                cells.setdefault(int(row["bytes"]), {}).setdefault(label, []).append(float(row["time_us"]))
    if not cells:
        continue
    print(f"\n{task}: median time us over {len(cells[min(cells)]['before'])} rounds each, after / before")
    print(f"{'bytes':>10} {'before':>8} {'after':>8} {'ratio':>6} {'best b':>7} {'best a':>7} {'ratio':>6}")
    for b in sorted(cells):
        bef, aft = statistics.median(cells[b]["before"]), statistics.median(cells[b]["after"])
        bb, ba = min(cells[b]["before"]), min(cells[b]["after"])
        print(f"{b:>10} {bef:8.2f} {aft:8.2f} {aft / bef:6.2f} {bb:7.2f} {ba:7.2f} {ba / bb:6.2f}")
