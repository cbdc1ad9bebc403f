"""Upstream's DiT estimator on the CPU, part by part, for comparison with
`lectern bench --stage flow`: full-size config, seeded random weights, CFG batch 2,
`--frames` total frames. Times one estimator call, one block, and the block's parts
(attention with its AdaLN, SDPA alone, feed-forward), then prints torch.profiler's
per-op table for one estimator call. `--bf16` runs it all under CPU bf16 autocast.

Usage: python upstream_dit_profile.py --frames 1208 --threads 2 [--bf16]
"""
import argparse, contextlib, json, os, sys, time
sys.path.insert(0, os.environ.get("REFBENCH_DIR", os.path.dirname(os.path.abspath(__file__))))
import upstream_env  # noqa: F401
import torch
import torch.nn.functional as F
from cosyvoice.flow.DiT.dit import DiT


def best(fn, reps):
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


@torch.inference_mode()
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=1208)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dit = DiT(dim=1024, depth=22, heads=16, dim_head=64, ff_mult=2, mel_dim=80, mu_dim=80,
              spk_dim=80, out_channels=80, static_chunk_size=50, num_decoding_left_chunks=-1).eval()
    n = a.frames
    x = torch.randn(2, 80, n)
    mask = torch.ones(2, 1, n)
    mu = torch.randn(2, 80, n)
    spks = torch.randn(2, 80)
    cond = torch.randn(2, 80, n)
    t = torch.tensor([0.3, 0.3])
    ctx = torch.autocast("cpu", dtype=torch.bfloat16) if a.bf16 else contextlib.nullcontext()
    res = {"frames": n, "threads": a.threads, "bf16_autocast": a.bf16, "torch": torch.__version__}
    with ctx:
        dit(x, mask, mu, t, spks, cond)  # warm-up
        res["call_s"] = best(lambda: dit(x, mask, mu, t, spks, cond), a.reps)
        block = dit.transformer_blocks[0]
        xs = torch.randn(2, n, 1024)
        temb = dit.time_embed(t)
        rope = dit.rotary_embed.forward_from_seq_len(n)
        attn_mask = torch.ones(2, 1, n, n, dtype=torch.bool)
        res["block_ms"] = 1e3 * best(lambda: block(xs, temb, mask=attn_mask, rope=rope), a.reps + 1)
        norm = block.attn_norm(xs, emb=temb)[0]
        res["adaln_ms"] = 1e3 * best(lambda: block.attn_norm(xs, emb=temb), a.reps + 1)
        res["attention_ms"] = 1e3 * best(lambda: block.attn(x=norm, mask=attn_mask, rope=rope), a.reps + 1)
        q = torch.randn(2, 16, n, 64)
        k = torch.randn(2, 16, n, 64)
        v = torch.randn(2, 16, n, 64)
        if a.bf16:
            q, k, v = q.bfloat16(), k.bfloat16(), v.bfloat16()
        res["sdpa_masked_ms"] = 1e3 * best(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask), a.reps + 1)
        res["sdpa_nomask_ms"] = 1e3 * best(lambda: F.scaled_dot_product_attention(q, k, v), a.reps + 1)
        res["ff_ms"] = 1e3 * best(lambda: block.ff(norm), a.reps + 1)
        res["qkv_ms"] = 1e3 * best(lambda: (block.attn.to_q(norm), block.attn.to_k(norm), block.attn.to_v(norm)), a.reps + 1)
        res["pos_conv_ms"] = 1e3 * best(lambda: dit.input_embed.conv_pos_embed(xs), a.reps + 1)
        print(json.dumps(res), flush=True)
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            dit(x, mask, mu, t, spks, cond)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30))


if __name__ == "__main__":
    main()
