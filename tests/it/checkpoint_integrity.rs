//! Checkpoint integrity (issue #17): a `.pt` file whose tensor data no longer matches its zip
//! CRC-32, or whose weights hold NaN or infinity, is refused at load with an error naming the
//! file and the tensor — on a copy of the tiny fixture model, damaged in a temporary directory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cli_common::{copy_dir, isolated_env};
use candle::{DType, Device, Tensor};
use lectern_model::Checkpoint;

const MODEL: &str = "fixtures/cosyvoice3-tiny-a/model";

/// Where one tensor's bytes sit in a `.pt` file, and the zip headers holding their CRC.
struct Located {
    name: String,
    /// Absolute file offset of the tensor's first byte.
    data_at: u64,
    /// Bytes of the tensor (element count × element size).
    len: u64,
    /// Offsets of the record's local and central directory headers.
    local_header: u64,
    central_header: u64,
    record: String,
}

/// The largest f32 tensor of `path`, located in the file.
fn largest_f32_tensor(path: &Path) -> Located {
    let infos = candle::pickle::read_pth_tensor_info(path, false, None).expect("tensor infos");
    let info = infos
        .iter()
        .filter(|i| i.dtype == DType::F32 && i.layout.is_contiguous())
        .max_by_key(|i| i.layout.shape().elem_count())
        .expect("an f32 tensor");
    let file = std::fs::File::open(path).expect("open");
    let mut zip = zip::ZipArchive::new(file).expect("zip");
    let entry = zip.by_name(&info.path).expect("record");
    Located {
        name: info.name.clone(),
        data_at: entry.data_start().expect("data start") + info.layout.start_offset() as u64,
        len: (info.layout.shape().elem_count() * 4) as u64,
        local_header: entry.header_start(),
        central_header: entry.central_header_start(),
        record: info.path.clone(),
    }
}

/// A copy of the fixture checkpoint `file` in `dir`.
fn copy_fixture(dir: &Path, file: &str) -> PathBuf {
    let dst = dir.join(file);
    std::fs::copy(Path::new(MODEL).join(file), &dst).expect("copy fixture");
    dst
}

/// Rewrites the CRC-32 of `at.record` in both zip headers to match the record's bytes now, as
/// if the file had been saved with those bytes.
fn restamp_crc(path: &Path, at: &Located) {
    let mut bytes = std::fs::read(path).expect("read");
    let (start, size) = {
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(&bytes)).expect("zip");
        let e = zip.by_name(&at.record).expect("record");
        (e.data_start().expect("data start") as usize, e.size() as usize)
    };
    let crc = crc32fast::hash(&bytes[start..start + size]).to_le_bytes();
    // CRC-32 sits 14 bytes into a local file header and 16 into a central directory header.
    bytes[at.local_header as usize + 14..][..4].copy_from_slice(&crc);
    bytes[at.central_header as usize + 16..][..4].copy_from_slice(&crc);
    std::fs::write(path, bytes).expect("write");
}

fn load_error(path: &Path) -> String {
    match Checkpoint::load(path, &Device::Cpu) {
        Ok(_) => panic!("{} was accepted", path.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_fixture_checkpoints_pass_the_checks() {
    for file in ["llm.pt", "flow.pt", "hift.pt"] {
        let path = Path::new(MODEL).join(file);
        Checkpoint::load(&path, &Device::Cpu).unwrap_or_else(|e| panic!("{file}: {e}"));
    }
}

#[test]
fn flipped_bytes_inside_a_tensor_are_refused_naming_file_and_tensor() {
    let tmp = tempfile::tempdir().unwrap();
    let path = copy_fixture(tmp.path(), "hift.pt");
    let at = largest_f32_tensor(&path);
    let mut bytes = std::fs::read(&path).unwrap();
    // A few bytes in the middle of the tensor's data, as a bad download or disk would.
    let mid = (at.data_at + at.len / 2) as usize;
    for b in &mut bytes[mid..mid + 3] {
        *b ^= 0x5a;
    }
    std::fs::write(&path, bytes).unwrap();
    let err = load_error(&path);
    assert!(err.contains(&path.display().to_string()), "file not named: {err}");
    assert!(err.contains(&format!("`{}`", at.name)), "tensor not named: {err}");
    assert!(err.contains("CRC-32"), "{err}");
}

#[test]
fn nan_and_infinity_in_weights_are_refused_naming_file_and_tensor() {
    for (bad, word) in [(f32::NAN, "NaN"), (f32::NEG_INFINITY, "-inf")] {
        let tmp = tempfile::tempdir().unwrap();
        let path = copy_fixture(tmp.path(), "hift.pt");
        let at = largest_f32_tensor(&path);
        let mut bytes = std::fs::read(&path).unwrap();
        let element = 7;
        let pos = at.data_at as usize + 4 * element;
        bytes[pos..pos + 4].copy_from_slice(&bad.to_le_bytes());
        std::fs::write(&path, bytes).unwrap();
        // A file saved with the bad value: its CRC is right, only the weight is wrong.
        restamp_crc(&path, &at);
        let err = load_error(&path);
        assert!(err.contains(&path.display().to_string()), "file not named: {err}");
        assert!(err.contains(&format!("`{}`", at.name)), "tensor not named: {err}");
        assert!(err.contains(word) && err.contains(&format!("element {element}")), "{err}");
    }
}

#[test]
fn nan_in_a_safetensors_file_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("w.safetensors");
    let good = Tensor::new(&[1f32, 2.0, 3.0], &Device::Cpu).unwrap();
    let bad = Tensor::new(&[1f32, f32::NAN], &Device::Cpu).unwrap();
    candle::safetensors::save(&HashMap::from([("a.weight", good), ("b.weight", bad)]), &path)
        .unwrap();
    let err = load_error(&path);
    assert!(err.contains("`b.weight`") && err.contains("NaN"), "{err}");
}

#[test]
fn written_checkpoints_load_back_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("w.pt");
    let a = Tensor::arange(0f32, 12.0, &Device::Cpu).unwrap().reshape((3, 4)).unwrap();
    let b = Tensor::new(&[1.5f32], &Device::Cpu).unwrap();
    let tensors = vec![("x.weight".to_string(), a.clone()), ("x.bias".to_string(), b.clone())];
    lectern_bench::checkpoint::write_pt(&path, &tensors).unwrap();
    let ckpt = Checkpoint::load(&path, &Device::Cpu).unwrap();
    let got = ckpt.get_unchecked("x.weight").unwrap();
    assert_eq!(got.to_vec2::<f32>().unwrap(), a.to_vec2::<f32>().unwrap());
    assert_eq!(ckpt.get_unchecked("x.bias").unwrap().to_vec1::<f32>().unwrap(), vec![1.5]);
}

/// The issue's own case: a damaged `llm.pt` in a model directory made `lectern render` exit 0
/// with wrong audio. It must now fail before rendering, naming the file and the tensor.
#[test]
fn render_refuses_a_model_with_a_damaged_llm_checkpoint() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("model");
    copy_dir(Path::new(MODEL), &model);
    let llm = model.join("llm.pt");
    let at = largest_f32_tensor(&llm);
    let mut bytes = std::fs::read(&llm).unwrap();
    let mid = (at.data_at + at.len / 3) as usize;
    bytes[mid..mid + 8].copy_from_slice(&0.37f64.to_le_bytes());
    std::fs::write(&llm, bytes).unwrap();
    let book = tmp.path().join("book.txt");
    std::fs::write(&book, "One short sentence.\n").unwrap();
    let out = tmp.path().join("book.wav");
    let o = Command::new(env!("CARGO_BIN_EXE_lectern"))
        .envs(isolated_env())
        .env("LECTERN_VOICES", "/nonexistent-lectern-voices")
        .args(["render", "--quiet", "--no-project", "--voice", "voices/tiny-demo", "--model"])
        .arg(&model)
        .arg(&book)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("llm.pt") && err.contains(&format!("`{}`", at.name)), "{err}");
    assert!(!out.exists(), "an output was written");
}
