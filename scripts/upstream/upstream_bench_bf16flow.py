"""The shared reference benchmark (`upstream_bench.py`, found through $REFBENCH_DIR or beside
this file) with upstream's flow call under PyTorch's CPU bf16 autocast: the fair counterpart
of `lectern bench --flow-matmul bf16`. The LM and the vocoder stay f32.

Usage: python upstream_bench_bf16flow.py --workload smoke --threads 2   (same flags)
Prints the same JSON line, with "flow_autocast": "bf16" added.
"""
import json
import os
import sys

sys.path.insert(0, os.environ.get("REFBENCH_DIR", os.path.dirname(os.path.abspath(__file__))))
import upstream_bench  # noqa: E402
import torch  # noqa: E402

_inference = upstream_bench.CausalMaskedDiffWithDiT.inference


def _autocast_inference(self, *args, **kwargs):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        mel, cache = _inference(self, *args, **kwargs)
    return mel.float(), cache


upstream_bench.CausalMaskedDiffWithDiT.inference = _autocast_inference
_print = print


def _tagged_print(*args, **kwargs):
    if len(args) == 1 and isinstance(args[0], str) and args[0].startswith("{"):
        d = json.loads(args[0])
        d["flow_autocast"] = "bf16"
        args = (json.dumps(d),)
    _print(*args, **kwargs)


upstream_bench.print = _tagged_print
upstream_bench.main()
