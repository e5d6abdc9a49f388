#!/usr/bin/env bash
# ws against tcp on this tree, alternating (order swapped every round), 8 rounds, allreduce and
# sendrecv, 2 ranks, 1 to 1024 floats. usage: ws_tcp.sh OUT_DIR
out=$1; mkdir -p "$out"
for i in $(seq 1 8); do
  order="ws tcp"; [ $((i % 2)) -eq 0 ] && order="tcp ws"
  for p in allreduce sendrecv; do
    for t in $order; do
      deno task -q $p --procs 2 --transport $t --max 1K --csv "$out/${t}_${p}_$i.csv" >/dev/null 2>&1 || echo "$t $p failed"
    done
  done
done
