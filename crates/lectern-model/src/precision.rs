//! The LM's storage precisions: a leaf that the LM and the projections it stores both use.

/// Storage precision of the projection weights (and the speech head). The one precision
/// vocabulary of the workspace: the engine's settings and every take record name it (serde,
/// snake_case: `f32`, `f16`, `bf16`, `q8_0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LmPrecision {
    #[default]
    F32,
    F16,
    Bf16,
    /// GGML q8_0 blocks of 32 along the inner dimension.
    Q8_0,
}

impl LmPrecision {
    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Bf16 => "bf16",
            Self::Q8_0 => "q8_0",
        }
    }
}
