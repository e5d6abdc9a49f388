#!/bin/bash
# alternate default vs --reproducible train runs; print epoch time_s per run
for i in 1 2 3 4 5; do
  for mode in "" "--reproducible"; do
    deno task --quiet train --procs ${PROCS:-2} --transport ${T:-shm} --epochs 2 --train-samples 12000 --test-samples 1000 $mode --csv /tmp/t.csv >/dev/null 2>&1 || echo FAIL
    echo "mode=${mode:-default} $(python3 -c "import csv;r=list(csv.DictReader(open('/tmp/t.csv')));print(' '.join(x['time_s'] for x in r), ' compute', ' '.join(x.get('compute_s','') for x in r), ' acc', r[-1].get('test_acc'))")"
  done
done
