#!/bin/bash
cd /tmp/amd2
up() { COSYVOICE_REF=/tmp/cv-ref /tmp/cv-venv/bin/python /work/main/target/devrun/refbench/upstream_bench.py --workload smoke --threads 2 > $1.json 2> $1.err; }
le() { env -u OPENBLAS_CORETYPE /usr/bin/time -f %e_wall_%U_user_%S_sys_%R_minflt /tmp/lectern-new bench --workload smoke --threads 2 --json --no-lead-sentence > $1.json 2> $1.err; }
echo "start $(date +%T)" > timing.txt
up r1-up-f32; echo "r1 up $(date +%T)" >> timing.txt
le r1-le-f32; echo "r1 le $(date +%T)" >> timing.txt
le r2-le-f32; echo "r2 le $(date +%T)" >> timing.txt
up r2-up-f32; echo "r2 up $(date +%T)" >> timing.txt
