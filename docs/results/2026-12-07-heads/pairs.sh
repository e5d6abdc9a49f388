#!/usr/bin/env bash
# Many short alternating runs (one size, N iterations, warm) from a worktree of the commit before
# (BEFORE) and this tree (AFTER): this VM flips between fast and slow states every few seconds, so
# runs next to each other are paired. usage: TASKS="..." SIZE=bytes N=iters pairs.sh BEFORE AFTER OUT ROUNDS
set -euo pipefail
before=$1 after=$2 out=$3 rounds=${4:-30}
mkdir -p "$out"
run() {
  for task in ${TASKS:-alltoallv alltoall allreduce}; do
    (cd "$1" && deno task "$task" --procs 2 -b ${SIZE:-16} -e ${SIZE:-16} -n ${N:-100000} -w 5000 --out-of-place-only \
      --csv "$out/${task}_$2_r$3.csv" > "$out/${task}_$2_r$3.txt" 2>&1)
  done
}
for r in $(seq 1 "$rounds"); do
  if (( r % 2 )); then run "$before" before "$r"; run "$after" after "$r"
  else run "$after" after "$r"; run "$before" before "$r"; fi
done
rm -f "$out"/*.json
