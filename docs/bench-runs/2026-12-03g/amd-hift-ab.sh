#!/bin/bash
# The vocoder stage, Lectern against upstream, alternated (upstream–Lectern–Lectern–upstream per
# round), one job at a time on this machine's two cores.
# Usage: bash amd-hift-ab.sh ROUNDS TAG   (from the repository root, release build present)
set -u
rounds=${1:-2}; tag=${2:-hift}
out=docs/bench-runs/2026-12-03g
up() { REFBENCH_DIR=/work/shared/refbench COSYVOICE_REF=/tmp/cv-ref env -u OPENBLAS_CORETYPE \
  /tmp/cv-venv/bin/python docs/bench-runs/2026-12-03e/upstream_hift_profile.py --threads 2 --reps 2 --no-60s \
  > $out/amd-$tag-r$1-up-$2.json 2>/dev/null; }
le() { ./target/release/lectern bench --stage hift --quick --threads 2 > $out/amd-$tag-r$1-le-$2.txt 2>&1; }
for r in $(seq 1 $rounds); do up $r a; le $r a; le $r b; up $r b; done
