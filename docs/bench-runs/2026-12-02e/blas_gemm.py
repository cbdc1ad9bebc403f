"""GFLOP/s of f32 x·Wᵀ at the DiT's projection shapes through OpenBLAS: numpy's bundled build and
Debian's libopenblas 0.3.21 (cblas_sgemm through ctypes). Usage: python blas_gemm.py LIB [--rows 2416]"""
import ctypes, json, sys, time
import numpy as np
SHAPES = [("qkv", 1024, 3072), ("out", 1024, 1024), ("ff0", 1024, 2048), ("ff2", 2048, 1024)]
def best(f, reps=5):
    f(); t = 1e9
    for _ in range(reps):
        s = time.perf_counter(); f(); t = min(t, time.perf_counter() - s)
    return t
lib = ctypes.CDLL(sys.argv[1])
lib.openblas_set_num_threads(2)
sgemm = lib.cblas_sgemm
P = ctypes.POINTER(ctypes.c_float)
sgemm.argtypes = [ctypes.c_int] * 6 + [ctypes.c_float, P, ctypes.c_int, P, ctypes.c_int, ctypes.c_float, P, ctypes.c_int]
cfg = np.show_config(mode="dicts") if "mode" in np.show_config.__code__.co_varnames else None
out = {"numpy": np.__version__, "numpy_blas": (cfg or {}).get("Build Dependencies", {}).get("blas"), "shapes": []}
lib.openblas_get_config.restype = ctypes.c_char_p
out["debian_openblas_config"] = lib.openblas_get_config().decode()
lib.openblas_get_corename.restype = ctypes.c_char_p
out["debian_openblas_core"] = lib.openblas_get_corename().decode()
for m in [int(r) for r in (sys.argv[3] if len(sys.argv) > 3 else "2416,3176").split(",")]:
    for name, k, n in SHAPES:
        rng = np.random.default_rng(0)
        x = rng.standard_normal((m, k), dtype=np.float32)
        w = (rng.standard_normal((n, k), dtype=np.float32) / k ** 0.5).astype(np.float32)
        y = np.empty((m, n), dtype=np.float32)
        flop = 2.0 * m * n * k
        t_np = best(lambda: np.matmul(x, w.T))
        # RowMajor=101, NoTrans=111, Trans=112: Y = X · Wᵀ
        call = lambda: sgemm(101, 111, 112, m, n, k, 1.0, x.ctypes.data_as(P), k, w.ctypes.data_as(P), k, 0.0, y.ctypes.data_as(P), n)
        t_deb = best(call)
        err = float(np.abs(y - x @ w.T).max())
        out["shapes"].append({"name": name, "m": m, "numpy_gflops": flop / t_np / 1e9, "debian_gflops": flop / t_deb / 1e9, "max_abs_diff": err})
print(json.dumps(out))
