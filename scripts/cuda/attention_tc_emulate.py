# Checks attention_tc.cu's index logic on the CPU, lane by lane: each warp's fragments are
# gathered and scattered exactly as the kernel does, with the PTX ISA's m16n8k8 .tf32 and
# m16n8k16 .bf16 fragment layouts and TF32 (cvt.rna) and bf16 (cvt.rn) rounding emulated, and the result compared with a float64
# softmax attention. It cannot see what only a GPU shows (the PTX itself, races, speed): it
# checks that the kernel's indices agree with the documented layouts, on shapes with partial
# query and key tiles. Keep it in step with the kernel by hand. Needs numpy.
#
#   python3 scripts/cuda/attention_tc_emulate.py
import numpy as np
BR=BC=64; PST=BC+4
def tf32(x):
    x = np.asarray(x, np.float32); b = x.view(np.uint32).astype(np.uint64)
    # round to nearest, ties away from zero, keep 10 mantissa bits (drop 13)
    b = ((b + (1 << 12)) & ~np.uint64((1 << 13) - 1)).astype(np.uint32)
    return b.view(np.float32)
def split(x):
    x = np.float32(x) if np.isscalar(x) else np.asarray(x, np.float32)
    hi = tf32(x); lo = tf32((x - hi).astype(np.float32)); return hi, lo
L = np.arange(32); G = L >> 2; C = L & 3
def mma(d, a, b):  # d: (32,4) a: (32,4) b: (32,2)  -> d + A·B
    A = np.zeros((16, 8)); B = np.zeros((8, 8)); D = np.zeros((16, 8))
    for l in range(32):
        g, c = l >> 2, l & 3
        A[g, c], A[g+8, c], A[g, c+4], A[g+8, c+4] = a[l]
        B[c, g], B[c+4, g] = b[l]
        D[g, 2*c], D[g, 2*c+1], D[g+8, 2*c], D[g+8, 2*c+1] = d[l]
    D = (D + A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)
    return np.stack([D[G, 2*C], D[G, 2*C+1], D[G+8, 2*C], D[G+8, 2*C+1]], 1)
def mma3(d, ah, al, bh, bl):
    d = mma(d, al, bh); d = mma(d, ah, bl); return mma(d, ah, bh)
def kernel(q, k, v, t, heads, DH):
    B_ = q.shape[0] // heads
    out = np.zeros((B_, t, heads * DH), np.float32)
    KS = DH // 8; NT = BC // 8
    for b in range(B_):
      for h in range(heads):
        hq, hk, hv = q[b*heads+h], k[b*heads+h], v[b*heads+h]
        for bx in range((t + BR - 1) // BR):
          for warp in range(4):
            r0 = bx*BR + warp*16 + G; r1 = r0 + 8
            def qv(r, d): return np.where(r < t, hq[np.minimum(r, t-1), d], 0).astype(np.float32)
            qh = np.zeros((KS, 32, 4), np.float32); ql = np.zeros_like(qh)
            for s in range(KS):
                d = s*8 + C
                a = np.stack([qv(r0, d), qv(r1, d), qv(r0, d+4), qv(r1, d+4)], 1)
                qh[s], ql[s] = split(a)
            o = np.zeros((KS, 32, 4), np.float32)
            m0 = np.full(32, -np.inf, np.float32); m1 = m0.copy(); l0 = np.zeros(32, np.float32); l1 = l0.copy()
            for k0 in range(0, t, BC):
                ks = np.zeros((BC, DH), np.float32); vs = np.zeros((BC, DH), np.float32)
                n_ = min(BC, t - k0); ks[:n_] = hk[k0:k0+n_]; vs[:n_] = hv[k0:k0+n_]
                sc = np.zeros((NT, 32, 4), np.float32)
                for n in range(NT):
                    for s in range(KS):
                        b0 = ks[n*8 + G, s*8 + C]; b1 = ks[n*8 + G, s*8 + C + 4]
                        bh, bl = split(np.stack([b0, b1], 1))
                        sc[n] = mma3(sc[n], qh[s], ql[s], bh, bl)
                for n in range(NT):
                    for i in range(4):
                        sc[n][:, i] = np.where(k0 + n*8 + 2*C + (i & 1) >= t, -np.inf, sc[n][:, i])
                mx0 = np.maximum(m0, sc[:, :, 0:2].max(axis=(0, 2))); mx1 = np.maximum(m1, sc[:, :, 2:4].max(axis=(0, 2)))
                # group of 4 lanes share a row
                mx0 = mx0.reshape(8, 4).max(1).repeat(4); mx1 = mx1.reshape(8, 4).max(1).repeat(4)
                a0 = np.exp(m0 - mx0); a1 = np.exp(m1 - mx1)
                sc[:, :, 0:2] = np.exp(sc[:, :, 0:2] - mx0[None, :, None]); sc[:, :, 2:4] = np.exp(sc[:, :, 2:4] - mx1[None, :, None])
                s0 = sc[:, :, 0:2].sum(axis=(0, 2)); s1 = sc[:, :, 2:4].sum(axis=(0, 2))
                s0 = s0.reshape(8, 4).sum(1).repeat(4); s1 = s1.reshape(8, 4).sum(1).repeat(4)
                l0 = l0 * a0 + s0; l1 = l1 * a1 + s1; m0, m1 = mx0, mx1
                o[:, :, 0:2] *= a0[None, :, None]; o[:, :, 2:4] *= a1[None, :, None]
                ps = np.zeros((16, PST), np.float32)
                for n in range(NT):
                    ps[G, n*8 + 2*C] = sc[n][:, 0]; ps[G, n*8 + 2*C + 1] = sc[n][:, 1]
                    ps[G+8, n*8 + 2*C] = sc[n][:, 2]; ps[G+8, n*8 + 2*C + 1] = sc[n][:, 3]
                for s in range(NT):
                    a = np.stack([ps[G, s*8 + C], ps[G+8, s*8 + C], ps[G, s*8 + C + 4], ps[G+8, s*8 + C + 4]], 1)
                    ah, al = split(a)
                    for n in range(KS):
                        b0 = vs[s*8 + C, n*8 + G]; b1 = vs[s*8 + C + 4, n*8 + G]
                        bh, bl = split(np.stack([b0, b1], 1))
                        o[n] = mma3(o[n], ah, al, bh, bl)
            for n in range(KS):
                d = h*DH + n*8 + 2*C
                for lane in range(32):
                    if r0[lane] < t:
                        out[b, r0[lane], d[lane]:d[lane]+2] = o[n, lane, 0:2] / l0[lane]
                    if r1[lane] < t:
                        out[b, r1[lane], d[lane]:d[lane]+2] = o[n, lane, 2:4] / l1[lane]
    return out
def reference(q, k, v, t, heads, DH):
    B_ = q.shape[0] // heads; out = np.zeros((B_, t, heads*DH))
    for bh in range(q.shape[0]):
        s = q[bh].astype(np.float64) @ k[bh].astype(np.float64).T
        p = np.exp(s - s.max(1, keepdims=True)); p /= p.sum(1, keepdims=True)
        out[bh // heads, :, (bh % heads)*DH:(bh % heads + 1)*DH] = p @ v[bh]
    return out
def bf16(x):
    x = np.asarray(x, np.float32); b = x.view(np.uint32).astype(np.uint64)
    b = ((b + 0x7fff + ((b >> 16) & 1)) >> 16 << 16).astype(np.uint32)  # nearest even
    return b.view(np.float32)
def mma_bf16(d, a, b):  # m16n8k16: a (32, 8) = 4 registers of 2 values, b (32, 4), d (32, 4)
    A = np.zeros((16, 16)); B = np.zeros((16, 8)); D = np.zeros((16, 8))
    for l in range(32):
        g, c = l >> 2, l & 3
        A[g, 2*c:2*c+2], A[g+8, 2*c:2*c+2], A[g, 2*c+8:2*c+10], A[g+8, 2*c+8:2*c+10] = a[l].reshape(4, 2)
        B[2*c:2*c+2, g], B[2*c+8:2*c+10, g] = b[l].reshape(2, 2)
        D[g, 2*c], D[g, 2*c+1], D[g+8, 2*c], D[g+8, 2*c+1] = d[l]
    D = (D + A @ B).astype(np.float32)
    return np.stack([D[G, 2*C], D[G, 2*C+1], D[G+8, 2*C], D[G+8, 2*C+1]], 1)
def kernel_bf16(q, k, v, t, heads, DH):
    B_ = q.shape[0] // heads
    out = np.zeros((B_, t, heads * DH), np.float32)
    KS = DH // 16; NT = BC // 8; ON = DH // 8
    for b in range(B_):
      for h in range(heads):
        hq, hk, hv = q[b*heads+h], k[b*heads+h], v[b*heads+h]
        for bx in range((t + BR - 1) // BR):
          for warp in range(4):
            r0 = bx*BR + warp*16 + G; r1 = r0 + 8
            def qv(r, d): return np.where(r < t, hq[np.minimum(r, t-1), d], 0).astype(np.float32)
            qa = np.zeros((KS, 32, 8), np.float32)
            for s in range(KS):
                d = s*16 + 2*C
                qa[s] = bf16(np.stack([qv(r0, d), qv(r0, d+1), qv(r1, d), qv(r1, d+1),
                                       qv(r0, d+8), qv(r0, d+9), qv(r1, d+8), qv(r1, d+9)], 1))
            o = np.zeros((ON, 32, 4), np.float32)
            m0 = np.full(32, -np.inf, np.float32); m1 = m0.copy(); l0 = np.zeros(32, np.float32); l1 = l0.copy()
            for k0 in range(0, t, BC):
                ks = np.zeros((BC, DH), np.float32); vt = np.zeros((DH, BC), np.float32)
                n_ = min(BC, t - k0); ks[:n_] = bf16(hk[k0:k0+n_]); vt[:, :n_] = bf16(hv[k0:k0+n_]).T
                sc = np.zeros((NT, 32, 4), np.float32)
                for n in range(NT):
                    for s in range(KS):
                        row = ks[n*8 + G]
                        bk = np.stack([row[np.arange(32), s*16 + 2*C], row[np.arange(32), s*16 + 2*C + 1],
                                       row[np.arange(32), s*16 + 2*C + 8], row[np.arange(32), s*16 + 2*C + 9]], 1)
                        sc[n] = mma_bf16(sc[n], qa[s], bk)
                for n in range(NT):
                    for i in range(4):
                        sc[n][:, i] = np.where(k0 + n*8 + 2*C + (i & 1) >= t, -np.inf, sc[n][:, i])
                mx0 = np.maximum(m0, sc[:, :, 0:2].max(axis=(0, 2))); mx1 = np.maximum(m1, sc[:, :, 2:4].max(axis=(0, 2)))
                mx0 = mx0.reshape(8, 4).max(1).repeat(4); mx1 = mx1.reshape(8, 4).max(1).repeat(4)
                a0 = np.exp(m0 - mx0); a1 = np.exp(m1 - mx1)
                sc[:, :, 0:2] = np.exp(sc[:, :, 0:2] - mx0[None, :, None]); sc[:, :, 2:4] = np.exp(sc[:, :, 2:4] - mx1[None, :, None])
                s0 = sc[:, :, 0:2].sum(axis=(0, 2)); s1 = sc[:, :, 2:4].sum(axis=(0, 2))
                s0 = s0.reshape(8, 4).sum(1).repeat(4); s1 = s1.reshape(8, 4).sum(1).repeat(4)
                l0 = l0 * a0 + s0; l1 = l1 * a1 + s1; m0, m1 = mx0, mx1
                o[:, :, 0:2] *= a0[None, :, None]; o[:, :, 2:4] *= a1[None, :, None]
                for j in range(NT // 2):
                    pa = bf16(np.concatenate([sc[2*j][:, 0:2], sc[2*j][:, 2:4], sc[2*j+1][:, 0:2], sc[2*j+1][:, 2:4]], 1))
                    for n in range(ON):
                        row = vt[n*8 + G]
                        bv = np.stack([row[np.arange(32), j*16 + 2*C], row[np.arange(32), j*16 + 2*C + 1],
                                       row[np.arange(32), j*16 + 2*C + 8], row[np.arange(32), j*16 + 2*C + 9]], 1)
                        o[n] = mma_bf16(o[n], pa, bv)
            for n in range(ON):
                d = h*DH + n*8 + 2*C
                for lane in range(32):
                    if r0[lane] < t:
                        out[b, r0[lane], d[lane]:d[lane]+2] = o[n, lane, 0:2] / l0[lane]
                    if r1[lane] < t:
                        out[b, r1[lane], d[lane]:d[lane]+2] = o[n, lane, 2:4] / l1[lane]
    return out
rng = np.random.default_rng(1)
for (t, heads, DH, B_) in [(5, 1, 16, 1), (64, 2, 16, 1), (130, 2, 32, 2), (77, 1, 64, 1), (200, 1, 64, 1)]:
    q = (rng.standard_normal((B_*heads, t, DH)) * 2 / np.sqrt(DH)).astype(np.float32)
    k = rng.standard_normal((B_*heads, t, DH)).astype(np.float32) * 2
    v = rng.standard_normal((B_*heads, t, DH)).astype(np.float32)
    got = kernel(q, k, v, t, heads, DH); want = reference(q, k, v, t, heads, DH)
    err = np.abs(got - want).max()
    # bf16: the same attention of the operands rounded to bf16 (P's rounding is the rest).
    want16 = reference(bf16(q), bf16(k), bf16(v), t, heads, DH)
    err16 = np.abs(kernel_bf16(q, k, v, t, heads, DH) - want16).max()
    print(f"t {t}, heads {heads}, dh {DH}, batch {B_}: 3xTF32 max |d| {err:.2e}; bf16 max |d| "
          f"{err16:.2e} against the bf16-rounded operands' attention; output scale {np.abs(want).max():.2f}")
    assert err < 1e-5, "the 3xTF32 kernel's indices disagree with the fragment layouts"
    assert err16 < 2e-2, "the bf16 kernel's indices disagree with the fragment layouts"
