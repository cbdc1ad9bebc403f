#!/bin/bash
# alternate: gemm crate (LECTERN_OPENBLAS=0) vs OpenBLAS, f32 smoke, 2 threads
cd /tmp
for r in 1 2 3; do
  for v in gemm blas; do
    if [ $v = gemm ]; then X="LECTERN_OPENBLAS=0"; else X="LECTERN_OPENBLAS="; fi
    env -u OPENBLAS_CORETYPE $X /usr/bin/time -f "%e wall %U user %S sys" /tmp/lectern-blas bench --workload smoke --threads 2 --json --no-lead-sentence > /tmp/ab-$r-$v.json 2> /tmp/ab-$r-$v.err
  done
done
