#!/bin/bash
# `bench --stage flow --quick --breakdown-frames 1208` alternated: before (old) and after (new)
# the AVX-512 attention core, four rounds, one job at a time (this machine, 2 cores).
set -u
OUT=$1
for r in 1 2 3 4; do
  for v in old new; do
    env -u OPENBLAS_CORETYPE /tmp/lectern-$v bench --stage flow --quick --threads 2 --breakdown-frames 1208 > "$OUT/stage-r$r-$v.txt" 2>&1
  done
done
