#!/bin/bash
# `smoke` f32 on AMD Zen 3 (this machine, 2 cores), one job at a time: upstream, Lectern with its
# AVX2 GEMM (the default here), Lectern without it (LECTERN_AVX2_GEMM=0: candle's matmul, as
# before), in rotating order. Usage: bash amd-smoke-ab.sh LECTERN_BINARY ROUNDS (from the root)
set -u
bin=$1; rounds=$2; out=docs/bench-runs/2026-12-03h
up() { COSYVOICE_REF=/tmp/cv-ref env -u OPENBLAS_CORETYPE /tmp/cv-venv/bin/python \
  /work/shared/refbench/upstream_bench.py --workload smoke --threads 2 > $out/amd-up-$1.json 2> $out/amd-up-$1.err; }
le() { $bin bench --workload smoke --threads 2 --json --no-lead-sentence > $out/amd-le-avx2-$1.json 2> $out/amd-le-avx2-$1.err; }
off() { LECTERN_AVX2_GEMM=0 $bin bench --workload smoke --threads 2 --json --no-lead-sentence > $out/amd-le-gemmcrate-$1.json 2> $out/amd-le-gemmcrate-$1.err; }
for r in $(seq 1 $rounds); do
  case $((r % 3)) in
    1) up $r; le $r; off $r ;;
    2) le $r; off $r; up $r ;;
    0) off $r; up $r; le $r ;;
  esac
done
