#!/usr/bin/env bash
# One-size latency runs of many simulated ranks, a tree before the closing fix (BEFORE) and this
# one (.) alternating: wall seconds, peak KB, exit code and the run's last line. Run from the
# project root. Usage: sim_close.sh BEFORE_TREE ROUNDS
set -u
before=$1 rounds=${2:-2}
for round in $(seq 1 "$rounds"); do
  for procs in 2048 4096; do
    for tree in "$before" .; do
      out=$( (cd "$tree" && /usr/bin/time -f "time %e %M" deno task latency --transport sim \
        --procs "$procs" -b 4 -e 4 -n 2 -w 1 2>&1; echo "rc $?") )
      echo "$round $procs $([ "$tree" = . ] && echo after || echo before)" \
        "$(grep '^time' <<<"$out" | cut -d' ' -f2-) $(grep '^rc' <<<"$out")" \
        "| $(grep -v '^time\|^rc\|^#\|Command exited' <<<"$out" | tail -1)"
    done
  done
done
