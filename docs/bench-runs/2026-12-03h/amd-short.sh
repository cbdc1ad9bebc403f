#!/bin/bash
# `short` f32 on AMD Zen 3 (this machine, 2 cores): Lectern (its AVX2 GEMM, the default here)
# then upstream, one job at a time. Usage: bash amd-short.sh LECTERN_BINARY (from the root)
set -u
bin=$1; out=docs/bench-runs/2026-12-03h
$bin bench --workload short --threads 2 --json --no-lead-sentence > $out/amd-short-le-avx2-1.json 2> $out/amd-short-le-avx2-1.err
COSYVOICE_REF=/tmp/cv-ref env -u OPENBLAS_CORETYPE /tmp/cv-venv/bin/python \
  /work/shared/refbench/upstream_bench.py --workload short --threads 2 > $out/amd-short-up-1.json 2> $out/amd-short-up-1.err
