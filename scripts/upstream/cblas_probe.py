"""sgemm GFLOP/s of CBLAS libraries and torch at the DiT's projection shapes, x·Wᵀ, 2 threads,
best of 5, libraries alternated per round. Usage: python cblas_probe.py NAME=PATH ... """
import ctypes, sys, time, json
import torch
SHAPES = [("qkv", 2416, 1024, 3072), ("out", 2416, 1024, 1024), ("ff0", 2416, 1024, 2048),
          ("ff2", 2416, 2048, 1024), ("qkv", 3176, 1024, 3072), ("ff2", 3176, 2048, 1024)]
THREADS = 2
torch.set_num_threads(THREADS)
libs = {}
for arg in sys.argv[1:]:
    name, path = arg.split("=", 1)
    lib = ctypes.CDLL(path)
    for setter in ("openblas_set_num_threads", "bli_thread_set_num_threads"):
        if hasattr(lib, setter):
            getattr(lib, setter)(ctypes.c_long(THREADS) if setter.startswith("bli") else ctypes.c_int(THREADS))
    info = ""
    if hasattr(lib, "openblas_get_corename"):
        lib.openblas_get_corename.restype = ctypes.c_char_p; info = lib.openblas_get_corename().decode()
    if hasattr(lib, "bli_arch_query_id"):
        lib.bli_arch_string.restype = ctypes.c_char_p
        info = lib.bli_arch_string(lib.bli_arch_query_id()).decode()
    lib.cblas_sgemm.argtypes = [ctypes.c_int] * 6 + [ctypes.c_float, ctypes.c_void_p, ctypes.c_int,
                                ctypes.c_void_p, ctypes.c_int, ctypes.c_float, ctypes.c_void_p, ctypes.c_int]
    libs[name] = (lib, info)
print(json.dumps({n: i for n, (_, i) in libs.items()}))
def best(fn, reps=5):
    b = 1e9
    for _ in range(reps):
        t = time.perf_counter(); fn(); b = min(b, time.perf_counter() - t)
    return b
torch.manual_seed(0)
for rnd in (1, 2, 3):
    for name, m, k, n in SHAPES:
        tx, tw = torch.randn(m, k), torch.randn(n, k)
        y = torch.empty(m, n); flop = 2.0 * m * k * n
        row = {"round": rnd, "shape": name, "m": m, "k": k, "n": n}
        ref = torch.nn.functional.linear(tx, tw)
        row["torch"] = round(flop / best(lambda: torch.nn.functional.linear(tx, tw)) / 1e9, 1)
        for lname, (lib, _) in libs.items():
            f = lambda: lib.cblas_sgemm(101, 111, 112, m, n, k, 1.0, tx.data_ptr(), k, tw.data_ptr(), k, 0.0, y.data_ptr(), n)
            row[lname] = round(flop / best(f) / 1e9, 1)
            row[lname + "_maxdiff"] = float((y - ref).abs().max())
        print(json.dumps(row), flush=True)
