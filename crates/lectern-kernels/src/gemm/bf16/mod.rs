//! bf16 products for `--flow-matmul bf16` on the CPU: `Y = X·B` with `X (rows, k)` f32 rounded
//! to bf16 per call and `B (k, n)` packed to bf16 once (a weight at load, the attention's keys
//! and values per head), accumulated in f32. Two micro-kernels over the same packed operands:
//!
//! * **Intel AMX** (`TDPBF16PS` on 16 × 16 tiles; Sapphire Rapids and later, Linux ≥ 5.16);
//! * **AVX512-BF16** (`VDPBF16PS` on 16 lanes) on AMD CPUs, which have no AMX: there the
//!   kernel outruns the f32 products (docs/benchmarks.md). Not on Intel cores without AMX
//!   (Cooper Lake, or a virtual machine that hides AMX): there `VDPBF16PS` is slower than f32
//!   FMA (docs/refutations.md), so the option keeps rounding the inputs for the f32 products.
//!
//! Why our own kernels: tract-linalg's AMX kernel holds one 16 × 16 accumulator tile and packs
//! the activations with scalar code, far behind oneDNN (docs/refutations.md). Here
//! the AMX micro-kernel holds a 2 × 2 block of accumulator tiles (32 × 32 outputs: each A and B
//! tile loaded serves two products) and walks `k` in chunks that keep its operands in L1/L2
//! (docs/benchmarks.md); for `k` of 64 values (the attention's `Q·Kᵀ` over
//! 64-value heads: two tile steps, so the 2 × 2 block loaded as many tiles as it multiplied) a
//! second AMX kernel holds a 32-row block's four A tiles and walks the column tiles under them.
//! `X` is rounded to bf16 once in a vectorised pass and read by the tile loads in place, and
//! `B` is laid out tile by tile at pack time. AMX intrinsics are nightly-only, so the AMX
//! micro-kernels are `asm!` (stable); the AVX512-BF16 one is stable intrinsics. Everything
//! around them — packing, padding, blocking, the tasks — is plain Rust, and the tests run it
//! through an emulation of the tile instructions on every machine, and through the real kernels
//! where the CPU has them.
//!
//! Tiles (palette 1): every tile is 16 rows × 64 bytes. An A tile is 16 rows of `X` × 32 bf16
//! values of `k`; a B tile is 16 "pair rows" × 16 columns × 2 (`B[2r + p, j]` at row `r`, value
//! `2j + p`, the VNNI layout `TDPBF16PS` reads — and one B tile row is the 16 column pairs one
//! `VDPBF16PS` reads); a C tile is 16 × 16 f32. `k` and `n` are padded with zeros to multiples
//! of 32 at pack time and the rows of `X` to a multiple of 32 per call, so the kernels never
//! handle an edge. The bf16 rows of `X` are [`PackedB::a_stride`] values apart: `k` padded, plus one
//! cache line, so that the 16 rows of an A tile do not all fall in the same cache sets (rows
//! 2 or 4 KB apart would).

// The micro-kernels are `asm!` and intrinsics; the tasks write disjoint blocks of one output
// buffer through a raw pointer (SAFETY notes at each use).
#![allow(unsafe_code)]

use std::sync::OnceLock;

use rayon::prelude::*;

use crate::shared_out::OutPtr;

/// Values of `k` per tile step, rows and columns per tile.
const TILE_K: usize = 32;
const TILE: usize = 16;
/// Rows and columns of the micro-kernel's output block (2 × 2 tiles).
const BLOCK: usize = 2 * TILE;
/// bf16 values in one packed B tile.
const TILE_VALUES: usize = TILE * TILE_K;
/// Rows of `X` and columns of `Y` per task (one rayon task each; 228 tasks for `smoke`'s
/// `qkv` product, so the threads stay balanced).
const TASK_ROWS: usize = 128;
const TASK_COLS: usize = 256;
/// Tile steps of `k` per pass over a task's outputs: 256 values, so that a row block's A rows
/// (32 × 256 bf16, 16 KB) stay in L1 while they serve every column block of the task, and the
/// task's B tiles (256 × 256, 128 KB) in L2. Without it a micro-kernel streamed all of `k` of
/// both from L2 (4 KB a step: more than L2 delivers in the step's 64 cycles). The outputs
/// make one round trip through memory per chunk.
const K_CHUNK: usize = 8;

/// Which bf16 micro-kernel runs on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// Intel AMX tiles.
    Amx,
    /// AVX512-BF16's `VDPBF16PS`.
    DotBf16,
}

impl Kernel {
    /// The name the benches and `--flow-matmul bf16`'s reports give it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Amx => "amx",
            Self::DotBf16 => "avx512-bf16",
        }
    }
}

/// The bf16 micro-kernel this CPU runs (AMX first), asked once; `None` where neither runs.
pub fn kernel() -> Option<Kernel> {
    static KERNEL: OnceLock<Option<Kernel>> = OnceLock::new();
    *KERNEL.get_or_init(|| {
        if crate::simd::amx_usable() {
            Some(Kernel::Amx)
        } else if crate::simd::has_avx512_bf16() && crate::simd::is_amd() {
            Some(Kernel::DotBf16)
        } else {
            None
        }
    })
}

/// Whether a bf16 micro-kernel runs here ([`kernel`]).
pub fn available() -> bool {
    kernel().is_some()
}

/// `rows` rounded up to the row blocks' 32: the rows of the `C` buffers the serial products
/// take ([`PackedB::product_serial`], [`PackedB::product_windows`]).
pub fn rows_pad(rows: usize) -> usize {
    rows.div_ceil(BLOCK) * BLOCK
}

/// Values from one bf16 row of the A operand to the next: `k_pad` plus one cache line (see the
/// module's notes).
fn a_stride(k_pad: usize) -> usize {
    k_pad + TILE_K
}

/// `B (k, n)` in bf16 (round to nearest even), zero-padded to multiples of 32 and laid out
/// tile by tile: tile `(column block cb, k block kb)` at `(cb · k_blocks + kb) · 512` values.
#[derive(Clone)]
pub struct PackedB {
    tiles: Vec<u16>,
    k: usize,
    n: usize,
    k_blocks: usize,
    n_pad: usize,
}

impl std::fmt::Debug for PackedB {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "amx::PackedB({} × {})", self.k, self.n)
    }
}

impl PackedB {
    /// Packs `B` whose element `(i, j)` is `src[i · row_stride + j · col_stride]`, with one of
    /// the strides 1: `B`'s columns contiguous (a weight `W (n, k)` read as `Wᵀ`, the
    /// attention's keys as `Kᵀ`) or its rows (the attention's values, a convolution's taps).
    ///
    /// # Panics
    /// Where neither stride is 1.
    pub fn new(src: &[f32], k: usize, n: usize, row_stride: usize, col_stride: usize) -> Self {
        let k_blocks = k.div_ceil(TILE_K);
        let n_pad = n.div_ceil(BLOCK) * BLOCK;
        let tiles = vec![0u16; n_pad / TILE * k_blocks * TILE_VALUES];
        let mut packed = Self { tiles, k, n, k_blocks, n_pad };
        if k == 0 || n == 0 {
            return packed;
        }
        if row_stride == 1 {
            packed.fill_by_columns(src, col_stride);
        } else {
            assert_eq!(col_stride, 1, "bf16 pack: strides {row_stride} and {col_stride}");
            packed.fill_by_row_pairs(src, row_stride);
        }
        packed
    }

    /// The tiles from `B`'s columns, `col_stride` apart: each column rounded to bf16 in one
    /// vectorised pass, then its pairs of `k` values copied to their places, a pair row of
    /// each of the column's tiles. (This and [`Self::fill_by_row_pairs`] are faster than
    /// copying value by value with both layouts' index arithmetic and bounds checks.)
    fn fill_by_columns(&mut self, src: &[f32], col_stride: usize) {
        let k_pad = self.k_pad();
        let mut column = vec![0u16; k_pad];
        for j in 0..self.n {
            rows_to_bf16_into(&mut column, &src[j * col_stride..], col_stride, self.k, k_pad);
            let (cb, jj) = (j / TILE, j % TILE);
            for (kb, chunk) in column.chunks_exact(TILE_K).enumerate() {
                let tile = &mut self.tiles[(cb * self.k_blocks + kb) * TILE_VALUES..];
                for (pr, pair) in chunk.chunks_exact(2).enumerate() {
                    tile[pr * 2 * TILE + 2 * jj..][..2].copy_from_slice(pair);
                }
            }
        }
    }

    /// The tiles from `B`'s rows, `row_stride` apart: each pair of rows rounded to bf16, then
    /// interleaved into one pair row of every column block's tile.
    fn fill_by_row_pairs(&mut self, src: &[f32], row_stride: usize) {
        let n_pad = self.n_pad;
        let mut rows = vec![0u16; 2 * n_pad];
        for i0 in (0..self.k).step_by(2) {
            let present = (self.k - i0).min(2);
            let x = &src[i0 * row_stride..];
            rows_to_bf16_into(&mut rows[..present * n_pad], x, row_stride, self.n, n_pad);
            rows[present * n_pad..].fill(0);
            let (kb, pr) = (i0 / TILE_K, i0 % TILE_K / 2);
            let (even, odd) = rows.split_at(n_pad);
            for cb in 0..n_pad / TILE {
                let at = (cb * self.k_blocks + kb) * TILE_VALUES + pr * 2 * TILE;
                let tile_row = &mut self.tiles[at..][..2 * TILE];
                let columns = even[cb * TILE..][..TILE].iter().zip(&odd[cb * TILE..][..TILE]);
                for (pair, (&e, &o)) in tile_row.chunks_exact_mut(2).zip(columns) {
                    pair.copy_from_slice(&[e, o]);
                }
            }
        }
    }

    /// A projection's weight `W (out, in)` row-major, for `Y = X·Wᵀ` (`B = Wᵀ`: k = in).
    pub fn from_weight(w: &[f32], out: usize, inp: usize) -> Self {
        Self::new(w, inp, out, 1, inp)
    }

    /// Bytes the packed tiles hold.
    pub fn bytes(&self) -> usize {
        self.tiles.len() * 2
    }

    pub fn k(&self) -> usize {
        self.k
    }

    pub fn n(&self) -> usize {
        self.n
    }

    /// `k` rounded up to the tiles' 32: the values of a bf16 row of the `A` operand.
    pub fn k_pad(&self) -> usize {
        self.k_blocks * TILE_K
    }

    /// Values from one bf16 row of the `A` operand to the next: [`Self::k_pad`] plus one cache
    /// line (see the module's notes).
    pub fn a_stride(&self) -> usize {
        a_stride(self.k_pad())
    }

    /// `n` rounded up to 32: the row length of the f32 output of [`Self::product_serial`].
    pub fn n_pad(&self) -> usize {
        self.n_pad
    }

    /// `C = A·B` on this thread: `a` is `rows_pad` bf16 rows [`Self::a_stride`] values apart
    /// ([`rows_to_bf16_serial`]), `c` `rows_pad × n_pad` f32, `rows_pad` a multiple of 32.
    /// For callers that are themselves one task of many (the attention's query blocks).
    ///
    /// # Panics
    /// Where no bf16 micro-kernel runs ([`available`]) or the buffers do not have those sizes.
    pub fn product_serial(&self, a: &[u16], c: &mut [f32]) {
        let kernel = MicroKernel::native().expect("bf16 product where no bf16 kernel runs");
        self.product_serial_with(a, c, kernel)
    }

    fn product_serial_with(&self, a: &[u16], c: &mut [f32], kernel: MicroKernel) {
        let rows_pad = c.len() / self.n_pad.max(1);
        assert_eq!(
            a.len(),
            rows_pad * self.a_stride(),
            "bf16 product: A {} values for {rows_pad} rows of B ({}, {})",
            a.len(),
            self.k,
            self.n
        );
        // With one or two column blocks (the attention's `P·V`: 64 outputs) B is a few tiles per
        // step and gains nothing from a chunk of `k` kept in L2, while each chunk costs the
        // outputs a round trip: all of `k` at once.
        let k_chunk = if self.n_pad <= 2 * BLOCK { self.k_blocks.max(1) } else { K_CHUNK };
        // Rows a_stride apart that do not overlap: the general case's special one.
        self.product_windows_with(a, self.a_stride(), c, kernel, k_chunk);
    }

    /// `C = A·B` on this thread where the rows of `A` are `a_stride` values apart and may
    /// overlap: a causal convolution's sliding windows over channel-last frames (`k` = taps ×
    /// channels, `a_stride` = channels: row `r` reads frames `r … r + taps − 1`), so that no
    /// window is ever copied out. `a` holds `(rows_pad − 1) · a_stride + k_pad` values or more,
    /// `c` `rows_pad × n_pad` f32, `rows_pad` a multiple of 32. `None` where no bf16 micro-kernel
    /// runs here.
    ///
    /// # Panics
    /// Where the buffers do not have those sizes.
    pub fn product_windows(&self, a: &[u16], a_stride: usize, c: &mut [f32]) -> Option<()> {
        let kernel = MicroKernel::native()?;
        self.product_windows_with(a, a_stride, c, kernel, K_CHUNK);
        Some(())
    }

    /// [`Self::product_windows`] on `kernel`, `k` in chunks of `k_chunk` tile steps.
    fn product_windows_with(
        &self,
        a: &[u16],
        a_stride: usize,
        c: &mut [f32],
        kernel: MicroKernel,
        k_chunk: usize,
    ) {
        let rows_pad = c.len() / self.n_pad.max(1);
        assert!(
            rows_pad % BLOCK == 0
                && c.len() == rows_pad * self.n_pad
                && (rows_pad == 0 || a.len() >= (rows_pad - 1) * a_stride + self.k_pad()),
            "bf16 window product: A {} values {a_stride} apart, C {} values for B ({}, {})",
            a.len(),
            c.len(),
            self.k,
            self.n,
        );
        if self.k_blocks == 0 || rows_pad == 0 {
            c.fill(0.0);
            return;
        }
        let c = OutPtr::new(c);
        // SAFETY: `a` and `c` have the sizes the task reads and writes (asserted above).
        unsafe { self.task(a, a_stride, c, (0, rows_pad), (0, self.n_pad), (kernel, k_chunk)) };
    }

    /// `X (rows, k) · B` → `(rows, n)` row-major. `None` where no bf16 micro-kernel runs here.
    pub fn matmul(&self, x: &[f32], rows: usize) -> Option<Vec<f32>> {
        MicroKernel::native().map(|kernel| self.matmul_with(x, rows, kernel))
    }

    fn matmul_with(&self, x: &[f32], rows: usize, kernel: MicroKernel) -> Vec<f32> {
        assert_eq!(x.len(), rows * self.k, "bf16 matmul: X is not ({rows}, {})", self.k);
        let rows_pad = rows.div_ceil(BLOCK) * BLOCK;
        let a = rows_to_bf16(x, rows, self.k, rows_pad, self.k_pad());
        let mut y = vec![0f32; rows_pad * self.n_pad];
        if self.k_blocks > 0 {
            self.run(&a, rows_pad, &mut y, kernel);
        }
        y.truncate(rows * self.n_pad);
        if self.n_pad != self.n {
            y = y.chunks_exact(self.n_pad).flat_map(|r| &r[..self.n]).copied().collect();
        }
        y
    }

    /// All tasks: row blocks × column blocks of `y (rows_pad, n_pad)`.
    fn run(&self, a: &[u16], rows_pad: usize, y: &mut [f32], kernel: MicroKernel) {
        let row_tasks = rows_pad.div_ceil(TASK_ROWS);
        let col_tasks = self.n_pad.div_ceil(TASK_COLS);
        let out = OutPtr::new(y);
        (0..row_tasks * col_tasks).into_par_iter().for_each(|task| {
            let r0 = (task % row_tasks) * TASK_ROWS;
            let c0 = (task / row_tasks) * TASK_COLS;
            let rows = TASK_ROWS.min(rows_pad - r0);
            let cols = TASK_COLS.min(self.n_pad - c0);
            // SAFETY: this task alone writes rows r0..r0+rows, columns c0..c0+cols of `y`
            // (rows_pad × n_pad, alive until `run` returns); `a` holds rows_pad rows.
            unsafe {
                self.task(a, self.a_stride(), out, (r0, rows), (c0, cols), (kernel, K_CHUNK))
            };
        });
    }

    /// One task's block: every 32 × 32 output block of rows `r0..r0+rows`, columns
    /// `c0..c0+cols` (multiples of 32), rows outermost: a row block's A tiles stay in L1 while
    /// the B tiles, 1 KB each and contiguous, stream from L2 (the other order, B held in L1 and
    /// the strided A rows streamed, is slower on AMX: docs/refutations.md), `k` in chunks of
    /// `k_chunk` tile steps. `A`'s rows are `a_stride` values apart. For `k` of two tile steps
    /// on the tile kernels, [`tiles::rows_k64`] instead, each 32-row block's A tiles held.
    ///
    /// # Safety
    /// As in [`Self::run`].
    unsafe fn task(
        &self,
        a: &[u16],
        a_stride: usize,
        out: OutPtr,
        (r0, rows): (usize, usize),
        (c0, cols): (usize, usize),
        (kernel, k_chunk): (MicroKernel, usize),
    ) {
        let tiles_per_column_block = self.k_blocks * TILE_VALUES;
        kernel.begin();
        if self.k_blocks == 2 && kernel.holds_a() {
            for r in (r0..r0 + rows).step_by(BLOCK) {
                let args = RowArgs {
                    a: a[r * a_stride..].as_ptr(),
                    a_stride: a_stride * 2,
                    b: self.tiles[c0 / TILE * tiles_per_column_block..].as_ptr(),
                    col_tiles: cols / TILE,
                    // SAFETY: r < rows_pad, c0 < n_pad: in bounds of `y`.
                    c: unsafe { out.get().add(r * self.n_pad + c0) },
                    c_stride: self.n_pad * 4,
                };
                // SAFETY: the pointers address 32 rows of A (64 values each), the two tiles of
                // each of the `cols / 16` column tiles from c0, and 32 rows × `cols` of `y`.
                unsafe { kernel.rows_k64(&args) };
            }
            kernel.end();
            return;
        }
        for kc in (0..self.k_blocks).step_by(k_chunk) {
            let steps = k_chunk.min(self.k_blocks - kc);
            for r in (r0..r0 + rows).step_by(BLOCK) {
                for c in (c0..c0 + cols).step_by(BLOCK) {
                    let b0 = &self.tiles[c / TILE * tiles_per_column_block + kc * TILE_VALUES..];
                    let b1 =
                        &self.tiles[(c / TILE + 1) * tiles_per_column_block + kc * TILE_VALUES..];
                    let args = BlockArgs {
                        a: a[r * a_stride + kc * TILE_K..].as_ptr(),
                        a_stride: a_stride * 2,
                        b0: b0.as_ptr(),
                        b1: b1.as_ptr(),
                        k_blocks: steps,
                        accumulate: kc > 0,
                        // SAFETY: r < rows_pad, c < n_pad: in bounds of `y`.
                        c: unsafe { out.get().add(r * self.n_pad + c) },
                        c_stride: self.n_pad * 4,
                    };
                    // SAFETY: the pointers address 32 rows of A (k_pad values each), `steps`
                    // tiles of each B column block, and a 32 × 32 block of `y`.
                    unsafe { kernel.block(&args) };
                }
            }
        }
        kernel.end();
    }
}

/// One micro-kernel call: the 32 × 32 block `C (+)= A·[B0 B1]` over `k_blocks` tile steps.
struct BlockArgs {
    /// 32 rows of bf16 values, `a_stride` bytes apart.
    a: *const u16,
    a_stride: usize,
    /// `k_blocks` consecutive packed tiles each: columns 0..16 and 16..32 of the block.
    b0: *const u16,
    b1: *const u16,
    k_blocks: usize,
    /// Add to C's values (a later chunk of `k`) rather than start from zero.
    accumulate: bool,
    /// 32 rows of 32 f32 values, `c_stride` bytes apart.
    c: *mut f32,
    c_stride: usize,
}

/// One call of the held-A kernel: the 32 rows of `C = A·B` over `col_tiles` column tiles, for
/// `k` of two tile steps (64 values).
struct RowArgs {
    /// 32 rows of 64 bf16 values, `a_stride` bytes apart.
    a: *const u16,
    a_stride: usize,
    /// The packed tiles of the first column tile: its two `k` tiles, then the next column
    /// tile's.
    b: *const u16,
    col_tiles: usize,
    /// 32 rows of `16 · col_tiles` f32 values, `c_stride` bytes apart.
    c: *mut f32,
    c_stride: usize,
}

/// The tile instructions, `VDPBF16PS`, or (tests) a scalar emulation of the tile instructions
/// on the same memory, which checks everything around the kernels on any machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MicroKernel {
    Amx,
    DotBf16,
    #[cfg(test)]
    Emulated,
}

impl MicroKernel {
    /// This CPU's kernel ([`kernel`]).
    fn native() -> Option<Self> {
        kernel().map(|k| match k {
            Kernel::Amx => Self::Amx,
            Kernel::DotBf16 => Self::DotBf16,
        })
    }

    /// Loads the tile configuration on this thread (AMX).
    fn begin(self) {
        if self == Self::Amx {
            tiles::load_config();
        }
    }

    /// Releases the tile state (so that a context switch saves none of it).
    fn end(self) {
        if self == Self::Amx {
            tiles::release();
        }
    }

    /// Whether [`Self::rows_k64`] runs: the tile kernels. (On AVX512-BF16 the 2 × 2 blocks
    /// hold their A pairs in registers already.)
    fn holds_a(self) -> bool {
        match self {
            Self::Amx => true,
            Self::DotBf16 => false,
            #[cfg(test)]
            Self::Emulated => true,
        }
    }

    /// # Safety
    /// `args` must address memory as [`RowArgs`] says; for `Amx`, after [`Self::begin`] on this
    /// thread, on a CPU where [`kernel`] is `Amx`. Not for `DotBf16` ([`Self::holds_a`]).
    unsafe fn rows_k64(self, args: &RowArgs) {
        match self {
            // SAFETY: forwarded from the caller.
            Self::Amx => unsafe { tiles::rows_k64(args) },
            Self::DotBf16 => unreachable!("the AVX512-BF16 kernel does not hold A"),
            // SAFETY: forwarded from the caller.
            #[cfg(test)]
            Self::Emulated => unsafe { emulated_rows_k64(args) },
        }
    }

    /// # Safety
    /// `args` must address memory as [`BlockArgs`] says; for `Amx`, after [`Self::begin`] on
    /// this thread, on a CPU where [`kernel`] is `Amx`; for `DotBf16`, where it is either.
    unsafe fn block(self, args: &BlockArgs) {
        match self {
            // SAFETY: forwarded from the caller.
            Self::Amx => unsafe { tiles::block_2x2(args) },
            // SAFETY: forwarded from the caller; AVX512-BF16 is there (`kernel`).
            Self::DotBf16 => unsafe { dot_bf16::block_2x2(args) },
            // SAFETY: forwarded from the caller (`args` addresses memory as `BlockArgs`
            // says); the emulation is scalar code that needs no CPU feature or tile state.
            #[cfg(test)]
            Self::Emulated => unsafe { emulated_block_2x2(args) },
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod tiles {
    use std::arch::asm;

    use super::{BlockArgs, RowArgs};

    /// `LDTILECFG`'s 64 bytes: palette 1, tiles 0–7 of 16 rows × 64 bytes.
    #[repr(C, align(64))]
    struct TileConfig {
        palette: u8,
        start_row: u8,
        reserved: [u8; 14],
        colsb: [u16; 16],
        rows: [u8; 16],
    }

    const CONFIG: TileConfig = TileConfig {
        palette: 1,
        start_row: 0,
        reserved: [0; 14],
        colsb: [64, 64, 64, 64, 64, 64, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0],
        rows: [16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0],
    };

    pub(super) fn load_config() {
        assert!(
            super::kernel() == Some(super::Kernel::Amx),
            "AMX tiles used where the CPU or the OS does not allow them"
        );
        // SAFETY: AMX is usable (above); the configuration is a valid palette-1 layout.
        unsafe { asm!("ldtilecfg [{}]", in(reg) &CONFIG, options(nostack, readonly)) };
    }

    pub(super) fn release() {
        // SAFETY: only reached after `load_config`, so AMX is available.
        unsafe { asm!("tilerelease", options(nostack, nomem)) };
    }

    /// tmm4–7: the block's four A tiles (rows 0–15 / 16–31 × `k` 0–31 / 32–63), loaded once;
    /// per column tile, tmm2–3 its two B tiles and tmm0–1 its two C tiles (rows 0–15 / 16–31),
    /// stored after two steps. The 2 × 2 kernel instead reloads A and B for every 32 × 32
    /// block, which at `k` = 64 is as many tile loads as products, plus the prefetches.
    ///
    /// # Safety
    /// See [`super::MicroKernel::rows_k64`].
    pub(super) unsafe fn rows_k64(p: &RowArgs) {
        if p.col_tiles == 0 {
            return;
        }
        let a1 = p.a.wrapping_byte_add(16 * p.a_stride);
        let c1 = p.c.wrapping_byte_add(16 * p.c_stride);
        // SAFETY: the caller's contract; tile state is configured on this thread.
        unsafe {
            asm!(
                "tileloadd tmm4, [{a0} + {sa}*1]",
                "tileloadd tmm5, [{a0} + {sa}*1 + 64]",
                "tileloadd tmm6, [{a1} + {sa}*1]",
                "tileloadd tmm7, [{a1} + {sa}*1 + 64]",
                "2:",
                "tileloadd tmm2, [{b} + {sb}*1]",
                "tileloadd tmm3, [{b} + {sb}*1 + 1024]",
                "tilezero tmm0",
                "tilezero tmm1",
                "tdpbf16ps tmm0, tmm4, tmm2",
                "tdpbf16ps tmm1, tmm6, tmm2",
                "tdpbf16ps tmm0, tmm5, tmm3",
                "tdpbf16ps tmm1, tmm7, tmm3",
                "tilestored [{c0} + {sc}*1], tmm0",
                "tilestored [{c1} + {sc}*1], tmm1",
                "add {b}, 2048",
                "add {c0}, 64",
                "add {c1}, 64",
                "dec {n}",
                "jnz 2b",
                a0 = in(reg) p.a,
                a1 = in(reg) a1,
                sa = in(reg) p.a_stride,
                b = inout(reg) p.b => _,
                sb = in(reg) 64usize,
                c0 = inout(reg) p.c => _,
                c1 = inout(reg) c1 => _,
                sc = in(reg) p.c_stride,
                n = inout(reg) p.col_tiles => _,
                options(nostack),
            );
        }
    }

    /// tmm0–3: the four C tiles (rows 0–15 / 16–31 × columns 0–15 / 16–31); tmm4–5: the A
    /// tiles of a k step; tmm6–7: the B tiles.
    ///
    /// # Safety
    /// See [`super::MicroKernel::block`].
    pub(super) unsafe fn block_2x2(p: &BlockArgs) {
        let a1 = p.a.wrapping_byte_add(16 * p.a_stride);
        let c1 = p.c.wrapping_byte_add(16 * p.c_stride);
        // SAFETY: the caller's contract; tile state is configured on this thread. The tile
        // registers are not the compiler's: they keep their values from one `asm!` to the next.
        unsafe {
            if p.accumulate {
                asm!(
                    "tileloadd tmm0, [{c0} + {sc}*1]",
                    "tileloadd tmm1, [{c0} + {sc}*1 + 64]",
                    "tileloadd tmm2, [{c1} + {sc}*1]",
                    "tileloadd tmm3, [{c1} + {sc}*1 + 64]",
                    c0 = in(reg) p.c,
                    c1 = in(reg) c1,
                    sc = in(reg) p.c_stride,
                    options(nostack, readonly),
                );
            } else {
                asm!(
                    "tilezero tmm0",
                    "tilezero tmm1",
                    "tilezero tmm2",
                    "tilezero tmm3",
                    options(nostack, nomem),
                );
            }
            asm!(
                "2:",
                // The next step's B tiles (16 lines each) into L1 while this step computes:
                // they stream from L2, where a tile load without them waits (the A tiles stay
                // in L1 across a task's column blocks). Past a chunk's end the lines are the
                // column block's next tiles; a prefetch never faults.
                ".irp off, 0, 64, 128, 192, 256, 320, 384, 448, 512, 576, 640, 704, 768, 832, 896, 960",
                "prefetcht0 [{b0} + 1024 + \\off]",
                "prefetcht0 [{b1} + 1024 + \\off]",
                ".endr",
                "tileloadd tmm4, [{a0} + {sa}*1]",
                "tileloadd tmm5, [{a1} + {sa}*1]",
                "tileloadd tmm6, [{b0} + {sb}*1]",
                "tileloadd tmm7, [{b1} + {sb}*1]",
                "tdpbf16ps tmm0, tmm4, tmm6",
                "tdpbf16ps tmm1, tmm4, tmm7",
                "tdpbf16ps tmm2, tmm5, tmm6",
                "tdpbf16ps tmm3, tmm5, tmm7",
                "add {a0}, 64",
                "add {a1}, 64",
                "add {b0}, 1024",
                "add {b1}, 1024",
                "dec {k}",
                "jnz 2b",
                "tilestored [{c0} + {sc}*1], tmm0",
                "tilestored [{c0} + {sc}*1 + 64], tmm1",
                "tilestored [{c1} + {sc}*1], tmm2",
                "tilestored [{c1} + {sc}*1 + 64], tmm3",
                a0 = inout(reg) p.a => _,
                a1 = inout(reg) a1 => _,
                b0 = inout(reg) p.b0 => _,
                b1 = inout(reg) p.b1 => _,
                k = inout(reg) p.k_blocks => _,
                sa = in(reg) p.a_stride,
                sb = in(reg) 64usize,
                c0 = in(reg) p.c,
                c1 = in(reg) c1,
                sc = in(reg) p.c_stride,
                options(nostack),
            );
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod tiles {
    use super::{BlockArgs, RowArgs};

    pub(super) fn load_config() {
        unreachable!("AMX is x86-64 only: `kernel` is None here")
    }

    pub(super) fn release() {}

    pub(super) unsafe fn block_2x2(_: &BlockArgs) {
        unreachable!("AMX is x86-64 only: `kernel` is None here")
    }

    pub(super) unsafe fn rows_k64(_: &RowArgs) {
        unreachable!("AMX is x86-64 only: `kernel` is None here")
    }
}

/// The 32 × 32 block on AVX512-BF16: 8 rows × 2 vectors of 16 columns at a time (16
/// accumulators, so a broadcast A pair and the two B vectors of a step stay in registers
/// beside them). One step of `VDPBF16PS`: each f32 lane adds the two products of a `k` pair,
/// the A pair broadcast to every lane and the B lane's pair one row of a packed B tile.
#[cfg(target_arch = "x86_64")]
mod dot_bf16 {
    use std::arch::x86_64::{
        __m512, __m512bh, __m512i, _mm512_dpbf16_ps, _mm512_loadu_ps, _mm512_loadu_si512,
        _mm512_set1_epi32, _mm512_setzero_ps, _mm512_storeu_ps,
    };

    use super::{BLOCK, BlockArgs, TILE, TILE_K, TILE_VALUES};

    /// Rows of the block per pass.
    const ROWS: usize = 8;

    /// # Safety
    /// See [`super::MicroKernel::block`]; the CPU has AVX512F and AVX512-BF16.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn block_2x2(p: &BlockArgs) {
        for r in (0..BLOCK).step_by(ROWS) {
            // SAFETY: forwarded from the caller; rows r..r + 8 of the block.
            unsafe { rows(p, r) };
        }
    }

    fn as_bf16(v: __m512i) -> __m512bh {
        // SAFETY: both are 64 plain bytes; the instruction reads them as 32 bf16 values.
        unsafe { std::mem::transmute::<__m512i, __m512bh>(v) }
    }

    /// Rows `r0..r0 + 8` of the block.
    ///
    /// # Safety
    /// As [`block_2x2`].
    #[target_feature(enable = "avx512f,avx512bf16")]
    unsafe fn rows(p: &BlockArgs, r0: usize) {
        // SAFETY: every pointer below stays in the block's rows of A and C and in the
        // `k_blocks` tiles of B0 and B1 (the caller's contract).
        unsafe {
            let c: [*mut f32; ROWS] = std::array::from_fn(|i| p.c.byte_add((r0 + i) * p.c_stride));
            let mut acc: [[__m512; 2]; ROWS] = [[_mm512_setzero_ps(); 2]; ROWS];
            if p.accumulate {
                for (acc, &c) in acc.iter_mut().zip(&c) {
                    *acc = [_mm512_loadu_ps(c), _mm512_loadu_ps(c.add(TILE))];
                }
            }
            let a: [*const u16; ROWS] =
                std::array::from_fn(|i| p.a.byte_add((r0 + i) * p.a_stride));
            for kb in 0..p.k_blocks {
                let (b0, b1) = (p.b0.add(kb * TILE_VALUES), p.b1.add(kb * TILE_VALUES));
                for pair in 0..TILE_K / 2 {
                    let b = [
                        as_bf16(_mm512_loadu_si512(b0.add(pair * 2 * TILE).cast())),
                        as_bf16(_mm512_loadu_si512(b1.add(pair * 2 * TILE).cast())),
                    ];
                    for (acc, &a) in acc.iter_mut().zip(&a) {
                        let pair_bits =
                            a.add(kb * TILE_K + 2 * pair).cast::<i32>().read_unaligned();
                        let a = as_bf16(_mm512_set1_epi32(pair_bits));
                        acc[0] = _mm512_dpbf16_ps(acc[0], a, b[0]);
                        acc[1] = _mm512_dpbf16_ps(acc[1], a, b[1]);
                    }
                }
            }
            for (acc, &c) in acc.iter().zip(&c) {
                _mm512_storeu_ps(c, acc[0]);
                _mm512_storeu_ps(c.add(TILE), acc[1]);
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod dot_bf16 {
    use super::BlockArgs;

    pub(super) unsafe fn block_2x2(_: &BlockArgs) {
        unreachable!("AVX512-BF16 is x86-64 only: `kernel` is None here")
    }
}

/// What `block_2x2` computes, instruction by instruction (`TDPBF16PS`: each output adds the
/// two products of a pair to the f32 accumulator), in scalar code.
///
/// # Safety
/// As [`MicroKernel::block`].
#[cfg(test)]
unsafe fn emulated_block_2x2(p: &BlockArgs) {
    let widen = |v: u16| f32::from_bits(u32::from(v) << 16);
    let mut c = [[0f32; BLOCK]; BLOCK];
    if p.accumulate {
        for (m, row) in c.iter_mut().enumerate() {
            for (j, v) in row.iter_mut().enumerate() {
                // SAFETY: a 32 × 32 block of C, within the caller's contract.
                *v = unsafe { *p.c.byte_add(m * p.c_stride).add(j) };
            }
        }
    }
    for kb in 0..p.k_blocks {
        for (m, c_row) in c.iter_mut().enumerate() {
            // SAFETY: row m of A, values kb·32..kb·32+32, within the caller's contract.
            let a = unsafe { p.a.byte_add(m * p.a_stride).add(kb * TILE_K) };
            for (jj, acc) in c_row.iter_mut().enumerate() {
                let b = if jj < TILE { p.b0 } else { p.b1 };
                for pr in 0..TILE_K / 2 {
                    // SAFETY: pair row pr, column jj % 16 of tile kb of this column block.
                    let (b_even, b_odd, a_even, a_odd) = unsafe {
                        let t = b.add(kb * TILE_VALUES + pr * 2 * TILE + (jj % TILE) * 2);
                        (*t, *t.add(1), *a.add(2 * pr), *a.add(2 * pr + 1))
                    };
                    *acc += widen(a_even) * widen(b_even) + widen(a_odd) * widen(b_odd);
                }
            }
        }
    }
    for (m, row) in c.iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            // SAFETY: a 32 × 32 block of C, within the caller's contract.
            unsafe { *p.c.byte_add(m * p.c_stride).add(j) = v };
        }
    }
}

/// What `rows_k64` computes: the 2 × 2 emulation over each pair of column tiles, from zero
/// (column tiles come in pairs: `n` is padded to 32).
///
/// # Safety
/// As [`MicroKernel::rows_k64`].
#[cfg(test)]
unsafe fn emulated_rows_k64(p: &RowArgs) {
    for pair in 0..p.col_tiles / 2 {
        // SAFETY: column tiles 2·pair and 2·pair + 1, two `k` tiles each, and their 32 columns
        // of C: within the caller's contract.
        let b0 = unsafe { p.b.add(2 * pair * 2 * TILE_VALUES) };
        let args = BlockArgs {
            a: p.a,
            a_stride: p.a_stride,
            b0,
            // SAFETY: column tile 2·pair + 1 < col_tiles, whose tiles start two `k` tiles after
            // those of column tile 2·pair (`RowArgs::b`'s layout), within the caller's tiles.
            b1: unsafe { b0.add(2 * TILE_VALUES) },
            k_blocks: 2,
            accumulate: false,
            // SAFETY: column 32·pair of C's first row: pair < col_tiles / 2, so columns
            // 32·pair..32·pair + 32 are within the 16·col_tiles of each row of `c`.
            c: unsafe { p.c.add(pair * BLOCK) },
            c_stride: p.c_stride,
        };
        // SAFETY: as above.
        unsafe { emulated_block_2x2(&args) };
    }
}

/// `x`'s bits rounded to bf16: to nearest, ties to even (what `VCVTNEPS2BF16` and the `half`
/// crate do); NaN stays NaN (quieted).
#[inline(always)]
pub(crate) fn bf16_bits(x: f32) -> u16 {
    let b = x.to_bits();
    let rounded = (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16;
    if x.is_nan() { ((b >> 16) as u16) | 0x40 } else { rounded }
}

crate::simd::multiversioned! {
    /// The first `k` values of the rows of `x` (`x_stride` apart) rounded to bf16 into rows of
    /// `row_len` values of `out` (the rest of each row zero), as many rows as `out` holds.
    pub(crate) fn rows_to_bf16_into(
        out: &mut [u16],
        x: &[f32],
        x_stride: usize,
        k: usize,
        row_len: usize,
    ) {
        for (i, o) in out.chunks_exact_mut(row_len).enumerate() {
            let (o, pad) = o.split_at_mut(k);
            for (o, &v) in o.iter_mut().zip(&x[i * x_stride..][..k]) {
                *o = bf16_bits(v);
            }
            pad.fill(0);
        }
    }
}

/// Rows `0..rows` of `x` (the first `k` values of each, rows `x_stride` apart) as the bf16 `A`
/// operand of a product with `k_pad` ([`PackedB::k_pad`]) in `out`: rows
/// [`PackedB::a_stride`] values apart, zero padding after each row's `k` values and after the last row. Single-threaded:
/// for callers that are themselves one task of many.
pub fn rows_to_bf16_serial(
    out: &mut [u16],
    x: &[f32],
    (rows, x_stride): (usize, usize),
    k: usize,
    k_pad: usize,
) {
    let row_len = a_stride(k_pad);
    assert!(
        k <= k_pad && out.len() >= rows * row_len,
        "bf16 rows: {rows} × {row_len} into {}",
        out.len()
    );
    assert!(
        rows == 0 || x.len() >= (rows - 1) * x_stride + k,
        "bf16 rows: {rows} of {k} in {}",
        x.len()
    );
    let (head, tail) = out.split_at_mut(rows * row_len);
    rows_to_bf16_into(head, x, x_stride, k, row_len);
    tail.fill(0);
}

/// `X (rows, k)` as the bf16 `A` operand: `rows_pad` rows [`PackedB::a_stride`] values apart (zero
/// padding), the rows shared over the threads.
fn rows_to_bf16(x: &[f32], rows: usize, k: usize, rows_pad: usize, k_pad: usize) -> Vec<u16> {
    let row_len = a_stride(k_pad);
    let mut out = vec![0u16; rows_pad * row_len];
    if k == 0 {
        return out;
    }
    const CHUNK_ROWS: usize = 64;
    out[..rows * row_len]
        .par_chunks_mut(CHUNK_ROWS * row_len)
        .zip(x.par_chunks(CHUNK_ROWS * k))
        .for_each(|(o, x)| rows_to_bf16_into(o, x, k, k, row_len));
    out
}

/// `x` rounded to bf16 (round to nearest even) and widened back: what an AMX product sees of
/// its inputs.
pub fn round_to_bf16(x: f32) -> f32 {
    f32::from_bits(u32::from(bf16_bits(x)) << 16)
}

#[cfg(test)]
mod tests;
