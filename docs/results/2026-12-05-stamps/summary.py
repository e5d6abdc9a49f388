# Medians over rounds of each size's mean time and p99 (out-of-place), before and after.
import csv, glob, statistics, sys
d, t = sys.argv[1], sys.argv[2]
def load(side):
    rows = {}
    for f in sorted(glob.glob(f"{d}/{t}_{side}_*.csv")):
        for r in csv.DictReader(open(f)):
            rows.setdefault(int(r["bytes"]), []).append((float(r["time_us"]), float(r["p99_us"]), float(r["inplace_time_us"])))
    return rows
b, a = load("before"), load("after")
print(f"{t}: medians of {len(next(iter(b.values())))} rounds")
print("bytes | before time | after time | after/before | before p99 | after p99 | before in-place | after in-place")
for k in sorted(b):
    med = lambda xs, i: statistics.median(x[i] for x in xs)
    print(f"{k} | {med(b[k],0):.2f} | {med(a[k],0):.2f} | {med(a[k],0)/med(b[k],0):.2f} | {med(b[k],1):.1f} | {med(a[k],1):.1f} | {med(b[k],2):.2f} | {med(a[k],2):.2f}")
