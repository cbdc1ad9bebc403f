//! The CPU's matrix products.

pub mod bf16;
pub mod bf16_weight;
pub mod blas;
pub mod few_rows;
pub mod operands;
pub mod sgemm;
