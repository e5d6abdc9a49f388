#!/usr/bin/env python3
"""Medians over the alternating rounds of ab.sh: time (us) per size, before and after, per task."""
import csv, glob, statistics, sys
from pathlib import Path
here = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent / "ab")
for task in sorted({Path(f).name.split("_before_")[0] for f in glob.glob(str(here / "*_before_r1.csv"))}):
    cells = {}
    for label in ["before", "after"]:
        for f in sorted(glob.glob(str(here / f"{task}_{label}_r*.csv"))):
            for row in csv.DictReader(open(f)):
                assert row["wrong"] == "0", f
                cells.setdefault(int(row["bytes"]), {}).setdefault(label, []).append(float(row["time_us"]))
    print(f"\n{task}: median time us over {len(cells[min(cells)]['before'])} rounds each, after / before")
    print(f"{'bytes':>10} {'before':>8} {'after':>8} {'ratio':>6}   after's rounds")
    for b in sorted(cells):
        bef, aft = statistics.median(cells[b]["before"]), statistics.median(cells[b]["after"])
        print(f"{b:>10} {bef:8.2f} {aft:8.2f} {aft / bef:6.2f}   {', '.join(f'{x:.2f}' for x in cells[b]['after'])}")
