#!/bin/bash
cd /tmp
export COSYVOICE_REF=/tmp/cv-ref
unset OPENBLAS_CORETYPE
for r in 1 2; do
  /tmp/cv-venv/bin/python /work/shared/refbench/upstream_bench.py --workload smoke --threads 2 > /tmp/amdup-$r-up-f32.json 2> /tmp/amdup-$r-up-f32.err
  /usr/bin/time -f "%e wall %U user %S sys" /tmp/lectern-final bench --workload smoke --threads 2 --json --no-lead-sentence > /tmp/amdup-$r-le-f32.json 2> /tmp/amdup-$r-le-f32.err
  /usr/bin/time -f "%e wall %U user %S sys" /tmp/lectern-final bench --workload smoke --threads 2 --json --no-lead-sentence --flow-matmul bf16 > /tmp/amdup-$r-le-bf16.json 2> /tmp/amdup-$r-le-bf16.err
done
