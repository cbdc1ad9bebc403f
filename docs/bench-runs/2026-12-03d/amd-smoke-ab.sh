#!/bin/bash
# `smoke` f32 before (old) and after (new) the AVX-512 attention core, alternated (new first),
# rounds 3 and 4 after amd-att.sh's two, one job at a time.
set -u
OUT=$1
le() { env -u OPENBLAS_CORETYPE /usr/bin/time -f "%e wall %U user %S sys" "$1" bench --workload smoke --threads 2 --json --no-lead-sentence > "$OUT/$2.json" 2> "$OUT/$2.err"; }
for r in 3 4; do
  le /tmp/lectern-new r$r-le-new
  le /tmp/lectern-old r$r-le-old
done
