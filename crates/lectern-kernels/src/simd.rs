//! The CPU's features, detected here and nowhere else, and hot elementwise loops compiled for
//! the widest x86 vector extension the CPU has.
//!
//! A release build targets baseline x86-64, so the compiler vectorises Lectern's own loops with
//! SSE2 (4 floats a step) even on a CPU with AVX-512 (16). `multiversioned!` compiles a
//! function three times (AVX-512, AVX2 + FMA, baseline) and calls the widest one this CPU has,
//! detected at run time (std caches the detection). Everything the function calls must be
//! `#[inline(always)]` to be compiled for those features too. (pulp's `Arch::dispatch`, in the
//! tree through gemm, does this for a closure, but calls the closure instead of inlining it, so
//! its loops stay SSE2: docs/refutations.md. A named function here is inlined by construction.)
//!
//! Results do not change with the level: Rust never contracts `a·b + c` into an FMA, and the
//! vectoriser keeps the order of every float operation (a reduction vectorises only where the
//! code spells out its partial sums), so each lane computes what the scalar loop computes.
//! The callers' tests compare the two bit for bit.

/// `multiversioned! { /// doc  pub fn name(a: A, b: B) { body } }`: see the module doc.
/// Arguments are plain identifiers; the function returns `()`.
macro_rules! multiversioned {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) {
            #[inline(always)]
            fn generic($($arg: $ty),*) $body

            #[cfg(target_arch = "x86_64")]
            #[allow(unsafe_code)] // calls into code compiled for features detected just before
            fn dispatch($($arg: $ty),*) {
                #[target_feature(enable = "avx512f")]
                fn avx512($($arg: $ty),*) {
                    generic($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                fn avx2($($arg: $ty),*) {
                    generic($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: this CPU has AVX-512F, the only feature `avx512` is compiled for.
                    unsafe { avx512($($arg),*) }
                } else if $crate::simd::has_avx2_fma()
                {
                    // SAFETY: this CPU has AVX2 and FMA, the features `avx2` is compiled for.
                    unsafe { avx2($($arg),*) }
                } else {
                    generic($($arg),*)
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            fn dispatch($($arg: $ty),*) {
                generic($($arg),*)
            }

            dispatch($($arg),*)
        }
    };
}
pub(crate) use multiversioned;

/// Whether this CPU has AVX2 and FMA, the level the AVX2 kernels need (std caches the
/// detection).
pub(crate) fn has_avx2_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether this CPU has AVX512F and AVX512-BF16 (`VDPBF16PS`).
pub(crate) fn has_avx512_bf16() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether this CPU has AVX512F, the level the AVX-512 kernels need.
pub(crate) fn has_avx512f() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Whether this CPU has the AVX-512 subsets of Skylake-X (F, BW, DQ, VL, CD), which OpenBLAS's
/// SkylakeX kernels use.
pub fn has_avx512_skylake_x() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        has!("avx512f")
            && has!("avx512bw")
            && has!("avx512dq")
            && has!("avx512vl")
            && has!("avx512cd")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// CPUID's vendor string is "AuthenticAMD".
#[cfg(target_arch = "x86_64")]
pub(crate) fn is_amd() -> bool {
    let id = std::arch::x86_64::__cpuid(0);
    [id.ebx, id.edx, id.ecx].map(u32::to_le_bytes).concat() == *b"AuthenticAMD"
}

#[cfg(not(target_arch = "x86_64"))]
pub(crate) fn is_amd() -> bool {
    false
}

/// Whether this CPU has AMX-BF16 and AMX-TILE and Linux granted this process the tile state.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[allow(unsafe_code)] // arch_prctl(2) (SAFETY below)
pub(crate) fn amx_usable() -> bool {
    // CPUID.(EAX=7, ECX=0):EDX bit 22 AMX-BF16, bit 24 AMX-TILE.
    if std::arch::x86_64::__cpuid(0).eax < 7 {
        return false;
    }
    let edx = std::arch::x86_64::__cpuid_count(7, 0).edx;
    let cpu_has = edx & (1 << 22) != 0 && edx & (1 << 24) != 0;
    // Linux hands out the 8 KB tile data state only on request (arch_prctl(2),
    // ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); without it a tile instruction faults.
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: arch_prctl with these arguments only changes this process's permissions.
    cpu_has
        && unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) }
            == 0
}

/// Whether AMX is usable (never off x86-64 Linux).
#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
pub(crate) fn amx_usable() -> bool {
    false
}
