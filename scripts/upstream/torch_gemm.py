"""GFLOP/s of PyTorch's CPU matmuls at the DiT's projection shapes (F.linear, weight (out, in)),
f32 and bf16, for a same-run comparison with `lectern bench --stage gemm --json`.

Usage: python torch_gemm.py [--threads 2] [--rows 2416,3176] [--reps 5]
Prints one JSON line.
"""
import argparse, json, time
import torch
import torch.nn.functional as F

SHAPES = [("qkv", 1024, 3072), ("out", 1024, 1024), ("ff0", 1024, 2048), ("ff2", 2048, 1024)]


def best(f, reps):
    f()
    t = float("inf")
    for _ in range(reps):
        s = time.perf_counter()
        f()
        t = min(t, time.perf_counter() - s)
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rows", default="2416,3176")
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    rows = []
    for m in [int(r) for r in a.rows.split(",")]:
        for name, k, n in SHAPES:
            x = torch.randn(m, k)
            w = torch.randn(n, k) / k ** 0.5
            flop = 2.0 * m * n * k
            with torch.inference_mode():
                t32 = best(lambda: F.linear(x, w), a.reps)
                xb, wb = x.bfloat16(), w.bfloat16()
                tbf = best(lambda: F.linear(xb, wb), a.reps)
            rows.append({"name": name, "m": m, "k": k, "n": n, "f32_s": t32, "f32_gflops": flop / t32 / 1e9,
                         "bf16_s": tbf, "bf16_gflops": flop / tbf / 1e9})
    caps = torch.backends.cpu.get_cpu_capability() if hasattr(torch.backends, "cpu") else None
    print(json.dumps({"impl": "torch", "torch": torch.__version__, "threads": a.threads,
                      "cpu_capability": caps, "mkldnn_bf16": torch.ops.mkldnn._is_mkldnn_bf16_supported(),
                      "shapes": rows}))


if __name__ == "__main__":
    main()
