"""Measured against simulated allreduce: python3 validate.py DIR (DIR holds auto_to_4M.csv, from
`deno task cluster run`, and sim_auto_to_4M.csv, from `--transport sim --sim-model`)."""
import csv, sys

def load(path):
    return {int(r["count"]): (float(r["time_us"]), r["picked"] or r["algorithm"])
            for r in csv.DictReader(open(path))}

d = sys.argv[1]
measured, sim = load(f"{d}/auto_to_4M.csv"), load(f"{d}/sim_auto_to_4M.csv")
print("%9s %12s %12s %8s  %s" % ("floats", "measured_us", "sim_us", "sim/meas", "measured pick / sim pick"))
big = []
for n in sorted(measured):
    if n not in sim:
        continue
    ratio = sim[n][0] / measured[n][0]
    if n >= 2**16:
        big.append(ratio)
    print("%9d %12.1f %12.1f %8.2f  %s / %s" % (n, measured[n][0], sim[n][0], ratio, measured[n][1], sim[n][1]))
print(f"# from 2^16 floats: sim/measured {min(big):.2f} to {max(big):.2f}")
