//! The model layer's error type: a leaf every module uses (loading errors carry the file path,
//! shape errors both shapes).

use std::path::PathBuf;

/// Errors of the model layer. Loading errors always carry the file path.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("model file not found: {path}")]
    MissingFile { path: PathBuf },
    #[error("cannot read {path}: {reason}")]
    CorruptFile { path: PathBuf, reason: String },
    #[error("{path}: tensor `{name}`: {reason}")]
    DamagedTensor { path: PathBuf, name: String, reason: String },
    #[error(
        "{path}: tensor `{name}` holds {value} at element {index}; weights must be finite (the \
         file is damaged or was saved from a diverged model)"
    )]
    NonFiniteWeight { path: PathBuf, name: String, index: usize, value: String },
    #[error("{path}: tensor `{name}` is missing")]
    MissingTensor { path: PathBuf, name: String },
    #[error("{path}: tensor `{name}` has shape {actual:?}, expected {expected:?}")]
    ShapeMismatch { path: PathBuf, name: String, expected: Vec<usize>, actual: Vec<usize> },
    #[error("{path}: {reason}")]
    BadConfig { path: PathBuf, reason: String },
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error(transparent)]
    Candle(#[from] candle::Error),
}

pub type Result<T> = std::result::Result<T, ModelError>;
