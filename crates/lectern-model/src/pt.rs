//! Reading upstream PyTorch `.pt` checkpoints, with integrity checks.
//!
//! A `.pt` file is a zip archive: `archive/data.pkl` (the pickled state dict, which names for
//! every tensor its storage record, dtype, offset, shape and strides) and one stored record per
//! storage (`archive/data/0`, `archive/data/1`, …). candle's pickle module parses `data.pkl`;
//! this module reads the records itself so it can check them:
//!
//! - **CRC-32.** Every record's bytes are checked against the CRC-32 the zip archive recorded
//!   when the file was written (what Python's `zipfile` checks). candle reads exactly a tensor's
//!   bytes and never reaches the end of the record, so the zip reader's own check at end of
//!   record never ran: a download with flipped bytes inside a tensor loaded without a word and
//!   gave wrong audio (issue #17). A hash recorded at first load would miss corruption that was
//!   already there; the archive's own CRC does not.
//! - **Finite weights.** A NaN or infinity in any float tensor is refused at load, naming the
//!   tensor and the element, instead of turning a whole render into silence or noise.
//!
//! Both checks name the file and the tensor. Their cost on the full-size files is measured by
//! `lectern bench --stage checkpoint` (CHANGELOG.md has the figures).

use std::collections::BTreeMap;
use std::io::{Read, Seek};
use std::path::Path;

use candle::pickle::TensorInfo;
use candle::{Device, Tensor};

use crate::error::{ModelError, Result};

/// Which integrity checks a load runs. [`LoadChecks::ALL`] is what every loader uses; the others
/// exist so the benchmark can measure what the checks cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadChecks {
    /// Compare each `.pt` record with its zip CRC-32.
    pub crc: bool,
    /// Refuse NaN and infinity in float tensors.
    pub finite: bool,
}

impl LoadChecks {
    pub const ALL: Self = Self { crc: true, finite: true };
    pub const NONE: Self = Self { crc: false, finite: false };
}

/// Reads every tensor of the `.pt` file at `path` onto the CPU, running `checks`.
pub fn read_pt(path: &Path, checks: LoadChecks) -> Result<Vec<(String, Tensor)>> {
    let corrupt = |reason: String| ModelError::CorruptFile { path: path.to_path_buf(), reason };
    let infos = candle::pickle::read_pth_tensor_info(path, false, None)
        .map_err(|e| corrupt(e.to_string()))?;
    let file = std::fs::File::open(path).map_err(|e| corrupt(e.to_string()))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))
        .map_err(|e| corrupt(format!("not a PyTorch zip archive: {e}")))?;
    let mut tensors = Vec::with_capacity(infos.len());
    for (record, users) in by_record(infos) {
        let bytes = read_record(&mut zip, &record, checks.crc)
            .map_err(|why| damaged(path, &record, &users, why))?;
        for info in users {
            let t = tensor_from_record(&bytes, &info)
                .map_err(|e| corrupt(format!("tensor `{}` (record `{record}`): {e}", info.name)))?;
            if checks.finite {
                check_finite(path, &info.name, &t)?;
            }
            tensors.push((info.name, t));
        }
    }
    Ok(tensors)
}

/// Groups the tensors by the storage record holding their data (views share one), so each
/// record is read and checked once.
fn by_record(infos: Vec<TensorInfo>) -> BTreeMap<String, Vec<TensorInfo>> {
    let mut map: BTreeMap<String, Vec<TensorInfo>> = BTreeMap::new();
    for info in infos {
        map.entry(info.path.clone()).or_default().push(info);
    }
    map
}

/// Why a record could not be used, before it is tied to its file and tensors.
enum RecordFault {
    Missing,
    Unreadable(String),
    Crc { expected: u32, actual: u32 },
}

/// The bytes of the zip record `name`, checked against the archive's CRC-32 when `crc`.
///
/// PyTorch stores records uncompressed, so the raw entry is the data and the CRC is computed
/// here (crc32fast) rather than left to the zip reader, which only checks a record read to
/// its end.
fn read_record<R: Read + Seek>(
    zip: &mut zip::ZipArchive<R>,
    name: &str,
    crc: bool,
) -> std::result::Result<Vec<u8>, RecordFault> {
    let index = zip.index_for_name(name).ok_or(RecordFault::Missing)?;
    let unreadable = |e: &dyn std::fmt::Display| RecordFault::Unreadable(e.to_string());
    let mut entry = zip.by_index_raw(index).map_err(|e| unreadable(&e))?;
    if entry.compression() != zip::CompressionMethod::Stored {
        let how = entry.compression();
        return Err(RecordFault::Unreadable(format!("compressed ({how}); PyTorch stores records")));
    }
    let expected = entry.crc32();
    let mut bytes = Vec::with_capacity(entry.size() as usize);
    entry.read_to_end(&mut bytes).map_err(|e| unreadable(&e))?;
    if bytes.len() as u64 != entry.size() {
        let why = format!("{} of {} bytes", bytes.len(), entry.size());
        return Err(RecordFault::Unreadable(why));
    }
    if crc {
        let actual = crc32fast::hash(&bytes);
        if actual != expected {
            return Err(RecordFault::Crc { expected, actual });
        }
    }
    Ok(bytes)
}

/// The error for a record that failed, naming the file and every tensor stored in it.
fn damaged(path: &Path, record: &str, users: &[TensorInfo], fault: RecordFault) -> ModelError {
    let names: Vec<&str> = users.iter().map(|i| i.name.as_str()).collect();
    let reason = match fault {
        RecordFault::Missing => format!("its data record `{record}` is missing from the archive"),
        RecordFault::Unreadable(why) => format!("its data record `{record}` is unreadable: {why}"),
        RecordFault::Crc { expected, actual } => format!(
            "its data (record `{record}`) fails the zip CRC-32 check (computed {actual:08x}, \
             the archive recorded {expected:08x}): the file is damaged, download it again"
        ),
    };
    ModelError::DamagedTensor { path: path.to_path_buf(), name: names.join("`, `"), reason }
}

/// One tensor built from its storage record: `info`'s offset (bytes), shape and strides, which
/// must be contiguous or Fortran-contiguous (as candle's own reader requires).
fn tensor_from_record(bytes: &[u8], info: &TensorInfo) -> candle::Result<Tensor> {
    let layout = &info.layout;
    let fortran = layout.is_fortran_contiguous();
    if !layout.is_contiguous() && !fortran {
        candle::bail!("non-contiguous tensors are not supported ({layout:?})");
    }
    let start = layout.start_offset();
    let len = layout.shape().elem_count() * info.dtype.size_in_bytes();
    let Some(data) = start.checked_add(len).and_then(|end| bytes.get(start..end)) else {
        candle::bail!("needs bytes {start}..{} of a {}-byte record", start + len, bytes.len());
    };
    let rank = layout.shape().rank();
    if rank > 1 && fortran {
        // Stored column-major: read with the dims reversed, then permute them back.
        let reversed: Vec<usize> = layout.dims().iter().rev().copied().collect();
        let t = Tensor::from_raw_buffer(data, info.dtype, &reversed, &Device::Cpu)?;
        return t.permute((0..rank).rev().collect::<Vec<_>>());
    }
    Tensor::from_raw_buffer(data, info.dtype, layout.dims(), &Device::Cpu)
}

/// Refuses a float tensor holding NaN or infinity, naming the file, the tensor and the first
/// bad element (in storage order). `t` must be on the CPU.
pub fn check_finite(path: &Path, name: &str, t: &Tensor) -> Result<()> {
    let Some((index, value)) = first_non_finite(t)? else { return Ok(()) };
    Err(ModelError::NonFiniteWeight {
        path: path.to_path_buf(),
        name: name.to_string(),
        index,
        value: value.to_string(),
    })
}

/// The first element of `t` that is NaN or infinite, with its value; `None` for integer tensors.
/// Reads the CPU storage in place: a copy of the largest tensor (the LM's 545 MB embedding)
/// would double the load's peak memory for nothing.
fn first_non_finite(t: &Tensor) -> Result<Option<(usize, f64)>> {
    use candle::{CpuStorage, Storage};
    let (storage, layout) = t.storage_and_layout();
    let Storage::Cpu(cpu) = &*storage else {
        return Err(ModelError::InvalidInput("the finite check reads CPU tensors only".into()));
    };
    Ok(match cpu {
        CpuStorage::F32(v) => first_bad(span(v, layout), f32::is_finite, f64::from),
        CpuStorage::F64(v) => first_bad(span(v, layout), f64::is_finite, |x| x),
        CpuStorage::F16(v) => first_bad(span(v, layout), half::f16::is_finite, f64::from),
        CpuStorage::BF16(v) => first_bad(span(v, layout), half::bf16::is_finite, f64::from),
        _ => None,
    })
}

/// The part of a storage a tensor covers: its elements when contiguous, else the whole storage
/// (a freshly loaded tensor owns exactly its storage, so that is the same set of elements).
fn span<'a, T>(storage: &'a [T], layout: &candle::Layout) -> &'a [T] {
    layout.contiguous_offsets().and_then(|(a, b)| storage.get(a..b)).unwrap_or(storage)
}

/// Position and value of the first element failing `finite`. Scans in blocks without an early
/// exit inside a block, so the common all-finite case vectorises.
fn first_bad<T: Copy>(
    xs: &[T],
    finite: impl Fn(T) -> bool,
    value: impl Fn(T) -> f64,
) -> Option<(usize, f64)> {
    const BLOCK: usize = 4096;
    let block = xs.chunks(BLOCK).position(|c| !c.iter().fold(true, |ok, &x| ok & finite(x)))?;
    let base = block * BLOCK;
    let offset = xs[base..].iter().position(|&x| !finite(x))?;
    Some((base + offset, value(xs[base + offset])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_bad_finds_the_first_non_finite_element() {
        let mut xs = vec![1f32; 10_000];
        assert_eq!(first_bad(&xs, f32::is_finite, f64::from), None);
        xs[9_000] = f32::INFINITY;
        xs[5_000] = f32::NAN;
        let (i, v) = first_bad(&xs, f32::is_finite, f64::from).unwrap();
        assert_eq!(i, 5_000);
        assert!(v.is_nan());
    }
}
