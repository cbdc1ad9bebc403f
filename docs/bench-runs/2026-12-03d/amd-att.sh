#!/bin/bash
# Smoke on this machine (AMD EPYC, 2 cores), one job at a time, two rounds: Lectern before the
# AVX-512 attention core (old), after it (new), upstream PyTorch f32 (up).
# usage: amd-att.sh OUT_DIR  (with /tmp/lectern-old, /tmp/lectern-new, /tmp/cv-venv, /tmp/cv-ref)
set -u
OUT=$1
le() { env -u OPENBLAS_CORETYPE /usr/bin/time -f "%e wall %U user %S sys" "$1" bench --workload smoke --threads 2 --json --no-lead-sentence > "$OUT/$2.json" 2> "$OUT/$2.err"; }
for r in 1 2; do
  le /tmp/lectern-old r$r-le-old
  le /tmp/lectern-new r$r-le-new
  COSYVOICE_REF=/tmp/cv-ref /tmp/cv-venv/bin/python /work/shared/refbench/upstream_bench.py --workload smoke --threads 2 > "$OUT/r$r-up-f32.json" 2> "$OUT/r$r-up-f32.err"
done
