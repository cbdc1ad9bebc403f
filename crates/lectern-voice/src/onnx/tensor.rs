//! ONNX tensors to candle tensors: the internal element types and `TensorProto` decoding, used
//! by [`super::graph`] (initializers) and [`super::ops`] (`Constant`, `Cast`). A leaf module.

use std::path::Path;

use candle::{DType, Device, Tensor};

use super::proto::{DataType, TensorProto};

/// The internal element type of an ONNX one: f32, i64 for every integer type, u8 for bool.
pub(super) fn internal_dtype(dt: i32) -> Result<DType, String> {
    use DataType as D;
    match DataType::try_from(dt) {
        Ok(D::Float) => Ok(DType::F32),
        Ok(D::Int64 | D::Int32 | D::Int16 | D::Int8 | D::Uint8 | D::Uint16 | D::Uint32) => {
            Ok(DType::I64)
        }
        Ok(D::Bool) => Ok(DType::U8),
        Ok(other) => {
            Err(format!("element type {} is not supported", format!("{other:?}").to_uppercase()))
        }
        Err(_) => Err(format!("unknown element type {dt}")),
    }
}

/// Decodes a `TensorProto` (inline or external data) into a CPU tensor of the internal type.
pub(super) fn tensor_from_proto(t: &TensorProto, dir: &Path) -> Result<Tensor, String> {
    let dims: Vec<usize> = t
        .dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("negative dim {d}")))
        .collect::<Result<_, _>>()?;
    let count: usize = dims.iter().product();
    let external;
    let raw: &[u8] = if t.data_location == 1 {
        external = external_data(t, dir)?;
        &external
    } else {
        &t.raw_data
    };
    let dtype = DataType::try_from(t.data_type)
        .map_err(|_| format!("unknown element type {}", t.data_type))?;
    let device = &Device::Cpu;
    let mismatch = |n: usize| format!("{n} values for shape {dims:?}");
    let tensor = match dtype {
        DataType::Float => {
            let values: Vec<f32> = if raw.is_empty() {
                t.float_data.clone()
            } else {
                le_values(raw, 4, |b| f32::from_le_bytes(b.try_into().unwrap()))
            };
            if values.len() != count {
                return Err(mismatch(values.len()));
            }
            Tensor::from_vec(values, dims.as_slice(), device)
        }
        DataType::Bool => {
            let values: Vec<u8> = if raw.is_empty() {
                t.int32_data.iter().map(|&v| u8::from(v != 0)).collect()
            } else {
                raw.iter().map(|&v| u8::from(v != 0)).collect()
            };
            if values.len() != count {
                return Err(mismatch(values.len()));
            }
            Tensor::from_vec(values, dims.as_slice(), device)
        }
        _ => {
            internal_dtype(t.data_type)?;
            let values = integer_values(t, dtype, raw);
            if values.len() != count {
                return Err(mismatch(values.len()));
            }
            Tensor::from_vec(values, dims.as_slice(), device)
        }
    };
    tensor.map_err(|e| e.to_string())
}

/// Integer tensor data widened to i64 (from `raw_data`, `int64_data` or `int32_data`).
fn integer_values(t: &TensorProto, dtype: DataType, raw: &[u8]) -> Vec<i64> {
    if raw.is_empty() {
        return match dtype {
            DataType::Int64 => t.int64_data.clone(),
            _ => t.int32_data.iter().map(|&v| i64::from(v)).collect(),
        };
    }
    match dtype {
        DataType::Int64 => le_values(raw, 8, |b| i64::from_le_bytes(b.try_into().unwrap())),
        DataType::Int32 => {
            le_values(raw, 4, |b| i64::from(i32::from_le_bytes(b.try_into().unwrap())))
        }
        DataType::Uint32 => {
            le_values(raw, 4, |b| i64::from(u32::from_le_bytes(b.try_into().unwrap())))
        }
        DataType::Int16 => {
            le_values(raw, 2, |b| i64::from(i16::from_le_bytes(b.try_into().unwrap())))
        }
        DataType::Uint16 => {
            le_values(raw, 2, |b| i64::from(u16::from_le_bytes(b.try_into().unwrap())))
        }
        DataType::Int8 => raw.iter().map(|&b| i64::from(b as i8)).collect(),
        _ => raw.iter().map(|&b| i64::from(b)).collect(),
    }
}

/// Little-endian values of `size` bytes each (a trailing partial value is dropped, and then
/// caught by the caller's count check).
fn le_values<T>(raw: &[u8], size: usize, decode: impl Fn(&[u8]) -> T) -> Vec<T> {
    raw.chunks_exact(size).map(decode).collect()
}

/// Reads external tensor data (`location`, `offset`, `length`) relative to the model's folder.
fn external_data(t: &TensorProto, dir: &Path) -> Result<Vec<u8>, String> {
    let field = |key: &str| t.external_data.iter().find(|e| e.key == key).map(|e| e.value.as_str());
    let location = field("location").ok_or("external data without a location")?;
    let number = |key: &str| -> Result<Option<usize>, String> {
        field(key)
            .map(|v| v.parse().map_err(|_| format!("external data {key} `{v}` is not a number")))
            .transpose()
    };
    let path = dir.join(location);
    let bytes =
        std::fs::read(&path).map_err(|e| format!("external data {}: {e}", path.display()))?;
    let offset = number("offset")?.unwrap_or(0);
    let end = match number("length")? {
        Some(len) => offset.checked_add(len),
        None => Some(bytes.len()),
    };
    match end {
        Some(end) if offset <= end && end <= bytes.len() => Ok(bytes[offset..end].to_vec()),
        _ => Err(format!("external data {} is shorter than its offset/length", path.display())),
    }
}
