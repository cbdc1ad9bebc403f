#!/bin/bash
# `short` f32 on AMD Zen 3 (this machine, 2 cores), one job at a time: Lectern (the AVX2
# attention core and GEMM, the defaults here) then upstream. Usage: bash amd-short.sh
# LECTERN_BINARY (from the root)
set -u
bin=$1; out=docs/bench-runs/2026-12-04b
$bin bench --workload short --threads 2 --json --no-lead-sentence > $out/amd-short-le.json 2> $out/amd-short-le.err
COSYVOICE_REF=/tmp/cv-ref env -u OPENBLAS_CORETYPE /tmp/cv-venv/bin/python \
  /work/shared/refbench/upstream_bench.py --workload short --threads 2 > $out/amd-short-up.json 2> $out/amd-short-up.err
