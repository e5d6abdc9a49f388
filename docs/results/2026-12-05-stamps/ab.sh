#!/bin/sh
# Alternating rounds (odd rounds before first, even rounds after first) of one allreduce sweep, before (the commit before, a worktree) and after.
# usage: ab.sh BEFORE_DIR AFTER_DIR OUT_DIR ROUNDS TRANSPORT
set -e
before=$1 after=$2 out=$3 rounds=$4 transport=$5
mkdir -p "$out"
for i in $(seq 1 "$rounds"); do
  order="before after"; [ $((i % 2)) -eq 0 ] && order="after before"
  for side in $order; do
    dir=$before; [ "$side" = after ] && dir=$after
    (cd "$dir" && deno task allreduce --transport "$transport" --procs 2 -b 4 -e 4K \
      --csv "$out/${transport}_${side}_$i.csv" > /dev/null 2>&1)
  done
done
