#!/usr/bin/env bash
# Before/after, alternating: small rooted and v collectives on shm (TASKS, on PROCS ranks), from a
# worktree of the commit before (BEFORE) and this tree (AFTER), order swapped every round.
# usage: [TASKS="gather scatter"] [PROCS="2 3"] [MAX=16K] ab.sh BEFORE_TREE AFTER_TREE OUT ROUNDS
set -euo pipefail
before=$1 after=$2 out=$3 rounds=${4:-4}
mkdir -p "$out"
run() { # tree label round
  for task in ${TASKS:-gather scatter}; do
    for procs in ${PROCS:-2 3}; do
      (cd "$1" && deno task "$task" --procs "$procs" -e "${MAX:-16K}" -f4 --out-of-place-only \
        --csv "$out/${task}_${procs}_$2_r$3.csv" > "$out/${task}_${procs}_$2_r$3.txt" 2>&1)
    done
  done
}
for r in $(seq 1 "$rounds"); do
  if (( r % 2 )); then run "$before" before "$r"; run "$after" after "$r"
  else run "$after" after "$r"; run "$before" before "$r"; fi
done
rm -f "$out"/*.json
