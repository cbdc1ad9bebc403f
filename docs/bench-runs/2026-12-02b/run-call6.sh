#!/bin/bash
# Device call 6 (#23): AMX tests with k in chunks, the GEMM table, then `smoke` bf16 against
# upstream f32 (two jobs at once on disjoint core pairs).
cd "$(dirname "$0")"
O=${OUT:-/tmp/out}; mkdir -p $O
L=$O/log.txt
export LD_LIBRARY_PATH=$PWD
[ -x lectern-new ] || { xz -d -T8 lectern-new.xz && chmod +x lectern-new; }
[ -x model-test ] || { xz -d -T8 model-test.xz && chmod +x model-test; }
B=./lectern-new
taskset -c 2,3 ./model-test amx bf16 attention > $O/amx-test.txt 2>&1; echo "amx test rc=$?" >> $L
(taskset -c 2,3 $B bench --stage gemm --threads 2 --json --quick > $O/gemm.json 2>&1) &
(taskset -c 4,5 python3 refbench/torch_gemm.py --threads 2 --rows 2416 > $O/torch-gemm.json 2>&1) &
wait
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site whl/*.whl >> $L 2>&1
mkdir -p /tmp/cv && tar -C /tmp/cv -xzf cv-ref.tgz
export COSYVOICE_REF=/tmp/cv/cv-ref PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
(taskset -c 2,3 python3 refbench/upstream_bench.py --workload smoke --threads 2 > $O/up-f32.json 2> $O/up-f32.err) &
(taskset -c 4,5 $B bench --workload smoke --threads 2 --json --no-lead-sentence --flow-matmul bf16 > $O/new-bf16.json 2> $O/new-bf16.err) &
wait
tail -n 5 $L; grep "test result" $O/amx-test.txt; head -12 $O/gemm.json
