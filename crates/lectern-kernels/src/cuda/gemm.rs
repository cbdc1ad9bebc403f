//! Products on cuBLAS that candle's ops do not offer: a bf16 × bf16 product with f32 sums
//! and an f32 result (candle's bf16 matmul rounds its output to bf16), for the flow's
//! `--flow-matmul bf16` projections ([`crate::gemm::bf16_weight`]).

// One cuBLAS call (its SAFETY note on the operands).
#![allow(unsafe_code)]

use candle::Tensor;

use crate::checks::on_cuda_f32;

/// `x · wᵀ` for `x (rows, in)` f32 and `w (out, in)` bf16: `x` rounded to bf16 (to nearest
/// even), the products on bf16 tensor cores with f32 sums, the result f32. `None` off CUDA and
/// for other dtypes or shapes.
pub fn bf16_product(x: &Tensor, w: &Tensor) -> candle::Result<Option<Tensor>> {
    let fits = x.rank() == 2 && w.rank() == 2 && x.dim(1)? == w.dim(1)?;
    if !fits || !on_cuda_f32(x) || !w.device().is_cuda() || w.dtype() != candle::DType::BF16 {
        return Ok(None);
    }
    imp::bf16_product(&x.to_dtype(candle::DType::BF16)?, &w.contiguous()?)
}

#[cfg(not(feature = "cuda"))]
mod imp {
    use candle::Tensor;

    pub fn bf16_product(_x: &Tensor, _w: &Tensor) -> candle::Result<Option<Tensor>> {
        Ok(None)
    }
}

#[cfg(feature = "cuda")]
mod imp {
    use candle::backend::BackendStorage;
    use candle::cuda_backend::{CudaStorage, WrapErr};
    use candle::{Layout, Shape, Tensor};

    use crate::cuda::nvrtc::{CudaOp, Op, output};

    /// Inputs: x `(rows, in)` and w `(out, in)`, both bf16 and contiguous.
    struct Bf16Product;

    impl CudaOp for Bf16Product {
        const NAME: &'static str = "bf16-product";

        fn launch(
            &self,
            inputs: &[(&CudaStorage, &Layout)],
        ) -> candle::Result<(CudaStorage, Shape)> {
            use candle::cuda_backend::cudarc::cublas::{result::gemm_ex, sys};
            use candle::cuda_backend::cudarc::driver::{DevicePtr, DevicePtrMut};
            let &[(xs, xl), (ws, wl)] = inputs else { candle::bail!("{}: x and w", Self::NAME) };
            let ((rows, k), (n, wk)) = (xl.shape().dims2()?, wl.shape().dims2()?);
            let (Some((x0, x1)), Some((w0, w1))) =
                (xl.contiguous_offsets(), wl.contiguous_offsets())
            else {
                candle::bail!("{}: inputs must be contiguous", Self::NAME)
            };
            if k != wk {
                candle::bail!("{}: x (…, {k}) for a weight (…, {wk})", Self::NAME)
            }
            let x = xs.as_cuda_slice::<half::bf16>()?.slice(x0..x1);
            let w = ws.as_cuda_slice::<half::bf16>()?.slice(w0..w1);
            let dev = xs.device();
            let mut out = output(dev, rows * n)?;
            let stream = dev.cuda_stream();
            let blas = dev.cublas_handle();
            let (alpha, beta) = (1f32, 0f32);
            let (m_i, n_i, k_i) = (n as i32, rows as i32, k as i32);
            {
                let (x_ptr, _x_guard) = x.device_ptr(&stream);
                let (w_ptr, _w_guard) = w.device_ptr(&stream);
                let (y_ptr, _y_guard) = out.device_ptr_mut(&stream);
                // SAFETY: column-major, this is y (n × rows, ld n) = wᵀ-as-stored (op T on the
                // k × n matrix w holds, ld k) · x (k × rows, ld k), i.e. row-major y = x·wᵀ:
                // w holds n·k bf16 values and x rows·k (their contiguous slices above), `out`
                // rows·n f32 values, every one written (beta = 0). alpha and beta are f32, as
                // CUBLAS_COMPUTE_32F requires; the handle is this device's, on its stream.
                unsafe {
                    gemm_ex(
                        *blas.handle(),
                        sys::cublasOperation_t::CUBLAS_OP_T,
                        sys::cublasOperation_t::CUBLAS_OP_N,
                        m_i,
                        n_i,
                        k_i,
                        (&raw const alpha).cast(),
                        w_ptr as *const _,
                        sys::cudaDataType_t::CUDA_R_16BF,
                        k_i,
                        x_ptr as *const _,
                        sys::cudaDataType_t::CUDA_R_16BF,
                        k_i,
                        (&raw const beta).cast(),
                        y_ptr as *mut _,
                        sys::cudaDataType_t::CUDA_R_32F,
                        m_i,
                        sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                        sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT_TENSOR_OP,
                    )
                }
                .w()?;
            }
            Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), Shape::from((rows, n))))
        }
    }

    pub fn bf16_product(x: &Tensor, w: &Tensor) -> candle::Result<Option<Tensor>> {
        Ok(Some(x.apply_op2_no_bwd(w, &Op(Bf16Product))?))
    }
}
