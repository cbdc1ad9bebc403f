#!/bin/bash
# `smoke` f32 against upstream, one job at a time on this machine's two cores, upstream–Lectern–
# Lectern–upstream. Usage: bash amd-smoke-ab.sh LECTERN_BINARY TAG  (from the repository root)
set -u
bin=$1; tag=$2; out=docs/bench-runs/2026-12-03g
up() { COSYVOICE_REF=/tmp/cv-ref env -u OPENBLAS_CORETYPE /tmp/cv-venv/bin/python \
  /work/shared/refbench/upstream_bench.py --workload smoke --threads 2 > $out/amd-$tag-up-$1.json 2> $out/amd-$tag-up-$1.err; }
le() { $bin bench --workload smoke --threads 2 --json --no-lead-sentence > $out/amd-$tag-le-$1.json 2> $out/amd-$tag-le-$1.err; }
up a; le a; le b; up b
