# ws / tcp per size: medians over rounds of each run's mean time (time_us). usage: DIR
import csv, glob, statistics, sys
d = sys.argv[1]
for p in ["allreduce", "sendrecv"]:
    t = {}
    for tr in ["ws", "tcp"]:
        for f in glob.glob(f"{d}/{tr}_{p}_*.csv"):
            for r in csv.DictReader(open(f)):
                t.setdefault((tr, int(r["count"])), []).append(float(r["time_us"]))
    print(f"{p}\n| floats | ws (µs) | tcp (µs) | ws / tcp |\n| -----: | ------: | -------: | -------: |")
    for c in sorted({c for _, c in t}):
        w, k = statistics.median(t["ws", c]), statistics.median(t["tcp", c])
        print(f"| {c} | {w:.2f} | {k:.2f} | {w / k:.2f} |")
