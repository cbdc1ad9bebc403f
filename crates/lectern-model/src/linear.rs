//! The one linear layer of every stage: `y = x·Wᵀ (+ b)` over the last dimension, as one flat
//! `(rows, in) @ Wᵀ` product, implementing candle's [`Module`].
//!
//! What varies is how the product runs: a dense weight (f32, or f16/bf16 for the
//! LM's reduced precisions), q8_0 blocks (the LM's `q8_0`), or the flow's split-f32 3xTF32 and
//! bf16 products ([`FlowMatmul`]). The variants are built from the f32 checkpoint weight once,
//! at load, so a forward pass never converts weights.

use candle::quantized::{GgmlDType, QMatMul, QTensor};
use candle::{D, DType, Module, Tensor};

use crate::error::{ModelError, Result};
use crate::flow::tf32x3::{self, FlowMatmul};
use crate::precision::LmPrecision;
use crate::weights::Weights;
use lectern_kernels::cuda::lm as lm_kernels;
use lectern_kernels::gemm::bf16_weight::Bf16Weight;
use lectern_kernels::gemm::few_rows;
use lectern_kernels::gemm::sgemm::F32Gemm;

/// How a [`Linear`]'s product runs.
#[derive(Debug, Clone)]
enum Product {
    /// A dense weight `(out, in)`: f32, or f16/bf16 with the rows cast to it and the product
    /// cast back to f32.
    Dense(Tensor),
    /// q8_0 blocks along the inner dimension.
    Q8_0(QMatMul),
    /// 3xTF32 on tensor cores: `[W_hi | W_lo | W_hi]` `(out, 3·in)` ([`tf32x3`]).
    Tf32x3(Tensor),
    /// bf16 products (AMX on CPUs that have it; [`Bf16Weight`]).
    Bf16(Bf16Weight),
}

/// A linear layer.
#[derive(Debug, Clone)]
pub struct Linear {
    /// The f32 weight `(out, in)` as loaded, kept while a variant may still be derived from it
    /// (flow layers); the LM's reduced-precision layers drop it to save its memory.
    weight: Option<Tensor>,
    product: Product,
    bias: Option<Tensor>,
    out_dim: usize,
    /// The LM's decode steps (1–16 rows) take their own routes: Lectern's CUDA rows kernel,
    /// and on the CPU the transposed product [`few_rows_product`]. The flow keeps candle's
    /// matmul for every row count, so its output stays what the fixture gates measured.
    decode_rows: bool,
    /// Lectern's kernels where they apply (the LM's rows kernel, the 3xTF32 split): on unless
    /// the stage turns them off ([`Linear::set_kernels`]).
    kernels: bool,
    /// The flow's f32 projections where they run on other than candle's matmul: the system's
    /// OpenBLAS on AVX-512 CPUs, Lectern's AVX2 GEMM on AVX2 CPUs without AVX-512
    /// ([`F32Gemm::for_flow`]); `None` elsewhere.
    f32_gemm: Option<F32Gemm>,
}

impl Linear {
    /// A dense f32 layer from its weight `(out, in)` and optional bias `(out,)`.
    pub fn new(weight: Tensor, bias: Option<Tensor>) -> candle::Result<Self> {
        let out_dim = weight.dim(0)?;
        Ok(Self {
            weight: Some(weight.clone()),
            product: Product::Dense(weight),
            bias,
            out_dim,
            decode_rows: false,
            kernels: true,
            f32_gemm: None,
        })
    }

    /// Loads `weight` `(out_dim, in_dim)` (and `bias` `(out_dim,)`) under `w`; shape errors name
    /// the checkpoint tensor.
    pub fn load(w: &Weights, out_dim: usize, in_dim: usize, bias: bool) -> Result<Self> {
        let weight = w.get("weight", &[out_dim, in_dim])?;
        let bias = if bias { Some(w.get("bias", &[out_dim])?) } else { None };
        Ok(Self::new(weight, bias)?)
    }

    /// One layer whose output columns are the outputs of `parts` in order (they must share the
    /// input width, and all or none have a bias): one matmul and one bias add instead of one per
    /// part, the point on a GPU where every kernel launch counts. Callers `narrow` the columns.
    pub fn stacked(parts: &[Linear]) -> Result<Self> {
        let weights = parts.iter().map(Linear::f32_weight).collect::<Result<Vec<_>>>()?;
        let biases: Vec<&Tensor> = parts.iter().filter_map(|p| p.bias.as_ref()).collect();
        let bias = match biases.len() {
            0 => None,
            n if n == parts.len() => Some(Tensor::cat(&biases, 0)?),
            _ => {
                return Err(ModelError::InvalidInput(
                    "stacked projections must all have a bias or none".into(),
                ));
            }
        };
        Ok(Self::new(Tensor::cat(&weights, 0)?, bias)?)
    }

    /// `y = s·(x·Wᵀ + b)`, by scaling the f32 weight and bias (before any cast or quantization).
    pub fn scaled(&self, s: f64) -> Result<Self> {
        let bias = self.bias.as_ref().map(|b| b * s).transpose()?;
        Ok(Self::new((self.f32_weight()? * s)?, bias)?)
    }

    /// This layer as the LM runs it at `precision` (the f32 weight is dropped for the reduced
    /// ones). q8_0 blocks run along the inner dimension, so stacking rows does not change them.
    pub fn for_lm(self, precision: LmPrecision) -> Result<Self> {
        let weight = self.f32_weight()?;
        let product = match precision {
            LmPrecision::F32 => Product::Dense(weight.clone()),
            LmPrecision::F16 => Product::Dense(weight.to_dtype(DType::F16)?),
            LmPrecision::Bf16 => Product::Dense(weight.to_dtype(DType::BF16)?),
            LmPrecision::Q8_0 => {
                let in_dim = weight.dim(1)?;
                if in_dim % 32 != 0 {
                    return Err(ModelError::InvalidInput(format!(
                        "q8_0 needs inner dimensions divisible by 32, got {in_dim}"
                    )));
                }
                let q = QTensor::quantize(&weight, GgmlDType::Q8_0)?;
                Product::Q8_0(QMatMul::from_qtensor(q)?)
            }
        };
        let keep = matches!(precision, LmPrecision::F32).then_some(weight);
        Ok(Self { weight: keep, product, decode_rows: true, ..self })
    }

    /// This layer with its product computed as the flow's `matmul` says (the split weight of
    /// 3xTF32 and the bf16 weight are built here, once).
    pub fn with_flow_matmul(&self, matmul: FlowMatmul) -> candle::Result<Self> {
        let weight = self.f32_weight().map_err(candle::Error::wrap)?;
        let product = match matmul {
            FlowMatmul::F32 => Product::Dense(weight),
            FlowMatmul::Tf32x3 => Product::Tf32x3(tf32x3::rhs(&weight)?),
            FlowMatmul::Bf16 => Product::Bf16(Bf16Weight::new(&weight)?),
        };
        let mut layer = Self { product, ..self.clone() };
        layer.set_f32_gemm(F32Gemm::for_flow());
        Ok(layer)
    }

    fn f32_weight(&self) -> Result<Tensor> {
        self.weight.clone().ok_or_else(|| {
            ModelError::InvalidInput("a reduced-precision layer has no f32 weight left".into())
        })
    }

    /// This layer's product on `gemm` where it is a dense f32 CPU weight (a flow projection),
    /// on candle's matmul with `None`.
    pub fn set_f32_gemm(&mut self, gemm: Option<F32Gemm>) {
        self.f32_gemm = match &self.product {
            Product::Dense(w) if w.dtype() == DType::F32 && w.device().is_cpu() => gemm,
            _ => None,
        };
    }

    /// What this layer's f32 product runs on where not on candle's matmul.
    pub fn f32_gemm(&self) -> Option<F32Gemm> {
        self.f32_gemm
    }

    /// Lectern's kernels on (the default) or candle's ops only.
    pub fn set_kernels(&mut self, on: bool) {
        self.kernels = on;
    }

    pub fn bias(&self) -> Option<&Tensor> {
        self.bias.as_ref()
    }

    /// The weight Lectern's decode rows kernel multiplies by, where [`Module::forward`] would
    /// run it (an LM layer with kernels on and a dense f32 or bf16 weight): callers that fold
    /// their neighbours into that kernel ([`lm_kernels::rows_matmul_fused`]) take it from here.
    pub fn decode_kernel_weight(&self) -> Option<&Tensor> {
        match &self.product {
            Product::Dense(w)
                if self.decode_rows
                    && self.kernels
                    && matches!(w.dtype(), DType::F32 | DType::BF16) =>
            {
                Some(w)
            }
            _ => None,
        }
    }

    /// `xs · Wᵀ` without the bias, for callers that fold the bias into their next kernel.
    pub fn product(&self, xs: &Tensor) -> candle::Result<Tensor> {
        let (flat, out_dims) = self.flatten(xs)?;
        let ys = match &self.product {
            Product::Dense(w) if w.dtype() == DType::F32 => match (self.decode_rows, self.f32_gemm)
            {
                (true, _) => {
                    few_rows_product(&flat, w)?.map_or_else(|| flat.matmul(&w.t()?), Ok)?
                }
                (false, Some(gemm)) if self.kernels => {
                    gemm.matmul_t(&flat, w)?.map_or_else(|| flat.matmul(&w.t()?), Ok)?
                }
                (false, _) => flat.matmul(&w.t()?)?,
            },
            Product::Dense(w) => flat.to_dtype(w.dtype())?.matmul(&w.t()?)?.to_dtype(DType::F32)?,
            Product::Q8_0(q) => q.forward(&flat)?,
            Product::Tf32x3(split) => tf32x3::matmul_t(&tf32x3::lhs(&flat, self.kernels)?, split)?,
            Product::Bf16(w) => w.matmul_t(&flat)?,
        };
        ys.reshape(out_dims)
    }

    /// `xs` as `(rows, in)`, and the shape of the output.
    fn flatten(&self, xs: &Tensor) -> candle::Result<(Tensor, Vec<usize>)> {
        let in_dim = xs.dim(D::Minus1)?;
        let flat = xs.reshape((xs.elem_count() / in_dim.max(1), in_dim))?;
        let mut out_dims = xs.dims().to_vec();
        *out_dims.last_mut().expect("rank ≥ 1") = self.out_dim;
        Ok((flat, out_dims))
    }

    /// Bytes held by the weights the forward pass uses (for telemetry).
    pub fn weight_bytes(&self) -> usize {
        let bytes = |t: &Tensor| t.elem_count() * t.dtype().size_in_bytes();
        match &self.product {
            Product::Dense(w) | Product::Tf32x3(w) => bytes(w),
            Product::Bf16(w) => w.bytes(),
            Product::Q8_0(QMatMul::QTensor(q)) => q.storage_size_in_bytes(),
            Product::Q8_0(QMatMul::Tensor(t) | QMatMul::TensorF16(t)) => bytes(t),
        }
    }
}

impl Module for Linear {
    fn forward(&self, xs: &Tensor) -> candle::Result<Tensor> {
        if let Some(w) = self.decode_kernel_weight()
            && xs.rank() == 2
            && let Some(y) = lm_kernels::rows_matmul(xs, w, self.bias.as_ref())?
        {
            return Ok(y);
        }
        let y = self.product(xs)?;
        match &self.bias {
            Some(b) => y.broadcast_add(b),
            None => Ok(y),
        }
    }
}

/// Output rows per rayon task of [`dot_product`] (64 weight rows: 230 KB at the LM's
/// width of 896, 1.2 MB for its 4864-wide down projection).
const ROWS_PER_TASK: usize = 64;

/// Most rows [`few_rows_product`] serves: the decode steps of up to 16 lanes.
const FEW_ROWS: usize = 16;
/// Most rows [`dot_product`] serves: past two rows the dots gain nothing over `(W·xᵀ)ᵀ`, which
/// wins once they are compute-bound (`bench --stage lm`).
const DOT_ROWS: usize = 2;

/// On the CPU, `x·Wᵀ` for 1 to [`FEW_ROWS`] rows (the decode steps of that many lanes): up to
/// [`DOT_ROWS`] as dot products ([`dot_product`]), more as `(W·xᵀ)ᵀ`. With its AVX-512
/// kernels (`x86-v4`) the `gemm` crate tiles the left operand's rows 48 at a time, so 2–8
/// rows of `x·Wᵀ` waste most of each tile (docs/refutations.md); as `W·xᵀ` the weight's rows
/// fill the tiles.
fn few_rows_product(flat: &Tensor, weight: &Tensor) -> candle::Result<Option<Tensor>> {
    let rows = flat.dim(0)?;
    if !flat.device().is_cpu() || !(1..=FEW_ROWS).contains(&rows) {
        return Ok(None);
    }
    if rows <= DOT_ROWS
        && let Some(y) = dot_product(flat, weight)?
    {
        return Ok(Some(y));
    }
    if rows == 1 {
        return Ok(None); // candle's matrix–vector path
    }
    let y_t = weight.matmul(&flat.t()?)?; // (out, rows)
    Ok(Some(y_t.t()?.contiguous()?))
}

/// `x·Wᵀ` for a few rows as dot products: each weight row is read once and dotted with every
/// input row at the CPU's vector width ([`dot_rows`]), the weight rows split over the threads.
/// A one-lane decode step streams every weight once and is bound by memory bandwidth, which
/// candle's one-row matmul through the gemm crate leaves far from saturated. `None` where it
/// does not apply (a weight that is not a plain CPU matrix).
fn dot_product(flat: &Tensor, weight: &Tensor) -> candle::Result<Option<Tensor>> {
    use candle::Storage;
    use rayon::prelude::*;
    let (rows, width) = flat.dims2()?;
    if !weight.is_contiguous() || weight.rank() != 2 || weight.dim(1)? != width {
        return Ok(None);
    }
    let out = weight.dim(0)?;
    let x = flat.flatten_all()?.to_vec1::<f32>()?;
    let (g, l) = weight.storage_and_layout();
    let Storage::Cpu(ws) = &*g else { return Ok(None) };
    let ws = &ws.as_slice::<f32>()?[l.start_offset()..][..out * width];
    // y_t[o][r] = W[o]·x[r], transposed at the end.
    let mut y_t = vec![0f32; out * rows];
    y_t.par_chunks_mut(ROWS_PER_TASK * rows)
        .zip(ws.par_chunks(ROWS_PER_TASK * width))
        .for_each(|(y, w)| few_rows::dot_rows(y, w, &x, width));
    drop(g);
    let y_t = Tensor::from_vec(y_t, (out, rows), flat.device())?;
    Ok(Some(y_t.t()?.contiguous()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle::Device;

    fn seeded(shape: (usize, usize), seed: u64) -> Tensor {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let data: Vec<f32> = (0..shape.0 * shape.1).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
        Tensor::from_vec(data, shape, &Device::Cpu).unwrap()
    }

    /// The few-rows product agrees with candle's matmul to f32 rounding for 1 to 16 rows,
    /// a width that is not a multiple of 32 and an output count that is not one of 64; more
    /// rows are left to the matmul.
    #[test]
    fn few_rows_product_matches_the_matmul() {
        for (rows, out, width) in
            [(1, 77, 100), (1, 130, 896), (1, 1, 31), (3, 130, 100), (16, 65, 64)]
        {
            let (x, w) = (seeded((rows, width), 1), seeded((out, width), 2));
            let got = few_rows_product(&x, &w).unwrap().expect("few CPU rows");
            let want = x.matmul(&w.t().unwrap()).unwrap();
            assert_eq!(got.dims(), want.dims());
            let d: f32 =
                (got - want).unwrap().abs().unwrap().max_all().unwrap().to_scalar().unwrap();
            assert!(d < 1e-5, "({rows}, {out}, {width}): max |Δ| {d:e}");
        }
        assert!(few_rows_product(&seeded((17, 16), 3), &seeded((8, 16), 4)).unwrap().is_none());
    }

    fn bits(t: &Tensor) -> Vec<u32> {
        t.flatten_all().unwrap().to_vec1::<f32>().unwrap().iter().map(|v| v.to_bits()).collect()
    }

    /// A flow layer set on `gemm` computes its product there: the same bits as `gemm`'s own
    /// call, within f32 rounding of candle's (at an inner width of 1024 the two block the sum
    /// differently, so the bits differ: the product did not silently stay on candle's).
    /// Returns the operands, for further checks.
    fn assert_a_flow_layer_runs_on(gemm: F32Gemm) -> (Tensor, Tensor) {
        let (w, x) = (seeded((192, 1024), 1), seeded((300, 1024), 2));
        let mut layer = Linear::new(w.clone(), None).unwrap();
        let on_candle = layer.product(&x).unwrap();
        layer.set_f32_gemm(Some(gemm));
        assert!(layer.f32_gemm().is_some_and(|g| g.label() == gemm.label()));
        let on_gemm = layer.product(&x).unwrap();
        let direct = gemm.matmul_t(&x, &w).unwrap().expect("f32 CPU operands");
        assert_eq!(bits(&on_gemm), bits(&direct));
        assert_ne!(bits(&on_gemm), bits(&on_candle), "the product stayed on candle's matmul");
        let diff = (&on_gemm - &on_candle).unwrap().abs().unwrap().flatten_all().unwrap();
        assert!(diff.max(0).unwrap().to_scalar::<f32>().unwrap() < 1e-4);
        (w, x)
    }

    /// On OpenBLAS; an LM layer's decode rows keep their own route.
    #[test]
    fn a_flow_layer_on_openblas_runs_there() {
        let blas = lectern_kernels::gemm::blas::system_openblas();
        let Some(blas) = lectern_test_support::optional::openblas_or_skip(blas) else { return };
        let (w, x) = assert_a_flow_layer_runs_on(F32Gemm::OpenBlas(blas));
        let mut lm = Linear::new(w, None).unwrap().for_lm(LmPrecision::F32).unwrap();
        lm.set_f32_gemm(Some(F32Gemm::OpenBlas(blas)));
        let row = x.narrow(0, 0, 2).unwrap();
        assert_eq!(
            bits(&lm.product(&row).unwrap()),
            bits(&few_rows_product(&row, lm.weight.as_ref().unwrap()).unwrap().unwrap())
        );
    }

    /// On Lectern's AVX2 GEMM.
    #[test]
    fn a_flow_layer_on_the_avx2_gemm_runs_there() {
        if lectern_kernels::gemm::sgemm::runs_here() {
            assert_a_flow_layer_runs_on(F32Gemm::Avx2);
        }
    }
}
