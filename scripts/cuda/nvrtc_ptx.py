# Compiles a kernel source as Lectern's runtime does (NVRTC with only --gpu-architecture, as
# `nvrtc::Module` passes it) and writes the PTX, so a kernel change can be checked before any
# device time: it compiles, and a refactor that must not change the code gives the same PTX.
# Compare two PTX files with register numbers masked (a refactor may only rename them):
#
#   python3 scripts/cuda/nvrtc_ptx.py old.cu compute_80 old.ptx
#   python3 scripts/cuda/nvrtc_ptx.py new.cu compute_80 new.ptx
#   python3 scripts/cuda/nvrtc_ptx.py --same old.ptx new.ptx
#
# `--same` says whether the two are the same instructions in the same order once register
# numbers are masked, and prints the lines that name other registers: read them (and the lines
# that set those registers) to see that only names moved.
#
# NVRTC: libnvrtc.so from $NVRTC_LIB (default: the toolkit of docs/cuda.md), its builtins
# library on LD_LIBRARY_PATH. No GPU needed.
import ctypes, os, re, sys


def ptx(source, arch):
    lib = ctypes.CDLL(os.environ.get("NVRTC_LIB", "/tmp/cudaroot/lib64/libnvrtc.so"))
    prog = ctypes.c_void_p()
    src = open(source, "rb").read()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), src, b"k.cu", 0, None, None) == 0
    opts = (ctypes.c_char_p * 1)(f"--gpu-architecture={arch}".encode())
    rc = lib.nvrtcCompileProgram(prog, 1, opts)
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, log)
    if rc != 0:
        sys.exit(f"{source}: NVRTC error {rc}\n{log.value.decode()}")
    lib.nvrtcGetPTXSize(prog, ctypes.byref(n))
    out = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetPTX(prog, out)
    return out.value.decode()


def lines_of(path):
    return [l.split("//")[0].strip() for l in open(path) if l.split("//")[0].strip()]


def masked(line):
    return re.sub(r"%(rd|fd|rs|hh|r|f|p|h)\d+", r"%\1", line)


# The same instructions in the same order with register numbers masked, then the lines whose
# registers differ, to be read: a renumbering is harmless, an operand taken from another
# register is not, and only reading the lines around tells them apart.
if sys.argv[1] == "--same":
    a, b = lines_of(sys.argv[2]), lines_of(sys.argv[3])
    if len(a) != len(b) or any(masked(x) != masked(y) for x, y in zip(a, b)):
        sys.exit("the PTX differs beyond register numbers")
    renamed = [(i, x, y) for i, (x, y) in enumerate(zip(a, b)) if x != y]
    print(f"the same instructions in the same order; {len(renamed)} lines name other registers")
    for i, x, y in renamed[:40]:
        print(f"  {i}: {x}\n  {' ' * len(str(i))}  {y}")
    sys.exit(0)
open(sys.argv[3], "w").write(ptx(sys.argv[1], sys.argv[2]))
