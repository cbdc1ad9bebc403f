#!/bin/bash
# Device call 4 (#23): AMX unit tests (projections and attention core), then `smoke` against
# upstream, four jobs at once on disjoint core pairs, then the flow stage bench in bf16 alone.
cd "$(dirname "$0")"
O=${OUT:-/tmp/out}; mkdir -p $O
L=$O/log.txt
{ nproc; python3 -c "import torch; print('torch', torch.__version__)"; } > $L 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site whl/*.whl >> $L 2>&1
mkdir -p /tmp/cv && tar -C /tmp/cv -xzf cv-ref.tgz
export COSYVOICE_REF=/tmp/cv/cv-ref PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 LD_LIBRARY_PATH=$PWD
[ -x lectern-new ] || { xz -d -T4 lectern-new.xz && chmod +x lectern-new; }
[ -x model-test ] || { xz -d -T4 model-test.xz && chmod +x model-test; }
B=./lectern-new
taskset -c 2,3 ./model-test amx bf16 attention --nocapture > $O/amx-test.txt 2>&1; echo "amx test rc=$?" >> $L
T=/tmp/jobs; mkdir -p $T
(taskset -c 2,3 python3 refbench/upstream_bench.py --workload smoke --threads 2 > $O/up-f32.json 2> $T/up-f32.err) &
(taskset -c 4,5 python3 refbench/upstream_bench_bf16flow.py --workload smoke --threads 2 > $O/up-bf16.json 2> $T/up-bf16.err) &
(taskset -c 6,7 $B bench --workload smoke --threads 2 --json --no-lead-sentence > $O/new-f32.json 2> $T/new-f32.err) &
(taskset -c 8,9 $B bench --workload smoke --threads 2 --json --no-lead-sentence --flow-matmul bf16 > $O/new-bf16.json 2> $T/new-bf16.err) &
wait
date >> $L
taskset -c 2,3 $B bench --stage flow --threads 2 --flow-matmul bf16 > $O/flow-bf16.txt 2>&1
for f in $T/*.err; do echo "== $f"; tail -n 3 $f; done >> $L
tail -n 30 $L; grep -E "bf16 −|test result" $O/amx-test.txt
