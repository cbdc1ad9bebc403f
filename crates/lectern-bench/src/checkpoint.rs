//! `lectern bench --stage checkpoint`: what the load-time integrity checks cost (issue #17).
//!
//! Builds the full-size seeded random `llm.pt`, `flow.pt` and `hift.pt` tensors (the other stage
//! benches' weights), writes each as a PyTorch `.pt` zip archive ([`write_pt`]) in a temporary
//! directory, then loads each file with [`Checkpoint::load_with`] several times with and without
//! the checks (zip CRC-32 of every record, finite weights), alternating, and reports the best
//! time of each, beside candle's own reader (what loaded checkpoints before the checks; the
//! overhead column is all checks against no checks). Times are the loading thread's CPU time
//! (the loader is single-threaded), so other work on a shared machine does not count. The files
//! were just written, so they are read from the page cache: the figures are the checks' CPU
//! cost, the part a faster disk does not hide.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use candle::{DType, Device, Tensor};

use crate::BenchOptions;
use lectern_model::config::ModelConfig;
use lectern_model::weights::{Checkpoint, LoadChecks};

/// Loads of each file per mode (the best is reported).
const RUNS: usize = 3;

/// Writes `tensors` as a PyTorch checkpoint (`torch.save(state_dict)`'s zip layout: a pickled
/// dict of `_rebuild_tensor_v2` calls in `archive/data.pkl`, one stored record per tensor in
/// `archive/data/N`), which candle's reader and [`Checkpoint::load`] accept. Tensors are written
/// contiguous, row-major, little-endian.
pub fn write_pt(path: &Path, tensors: &[(String, Tensor)]) -> anyhow::Result<()> {
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut zip = zip::ZipWriter::new(file);
    let mut pickle = Pickle::new();
    let mut records = Vec::with_capacity(tensors.len());
    for (key, (name, t)) in tensors.iter().enumerate() {
        let t = t.to_device(&Device::Cpu)?.contiguous()?;
        pickle.tensor(name, &key.to_string(), &t)?;
        records.push((key, raw_le_bytes(&t)?));
    }
    let stored = |len: usize| {
        zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .large_file(len as u64 >= u64::from(u32::MAX))
    };
    let pkl = pickle.finish();
    zip.start_file("archive/data.pkl", stored(pkl.len()))?;
    zip.write_all(&pkl)?;
    for (key, bytes) in records {
        zip.start_file(format!("archive/data/{key}"), stored(bytes.len()))?;
        zip.write_all(&bytes)?;
    }
    zip.start_file("archive/version", stored(2))?;
    zip.write_all(b"3\n")?;
    zip.finish()?.flush()?;
    Ok(())
}

/// The tensor's elements as little-endian bytes, in row-major order.
fn raw_le_bytes(t: &Tensor) -> anyhow::Result<Vec<u8>> {
    let t = t.flatten_all()?;
    Ok(match t.dtype() {
        DType::F32 => t.to_vec1::<f32>()?.iter().flat_map(|x| x.to_le_bytes()).collect(),
        DType::F64 => t.to_vec1::<f64>()?.iter().flat_map(|x| x.to_le_bytes()).collect(),
        DType::F16 => t.to_vec1::<half::f16>()?.iter().flat_map(|x| x.to_le_bytes()).collect(),
        DType::BF16 => t.to_vec1::<half::bf16>()?.iter().flat_map(|x| x.to_le_bytes()).collect(),
        DType::I64 => t.to_vec1::<i64>()?.iter().flat_map(|x| x.to_le_bytes()).collect(),
        DType::U8 => t.to_vec1::<u8>()?,
        other => anyhow::bail!("write_pt: dtype {other:?} has no PyTorch storage class here"),
    })
}

/// The pickle (protocol 2) of a state dict, built one tensor at a time.
struct Pickle {
    out: Vec<u8>,
}

impl Pickle {
    fn new() -> Self {
        // PROTO 2, EMPTY_DICT, MARK (the items follow, closed by SETITEMS).
        Self { out: vec![0x80, 2, b'}', b'('] }
    }

    fn unicode(&mut self, s: &str) {
        self.out.push(b'X');
        self.out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        self.out.extend_from_slice(s.as_bytes());
    }

    fn global(&mut self, module: &str, name: &str) {
        self.out.push(b'c');
        self.out.extend_from_slice(format!("{module}\n{name}\n").as_bytes());
    }

    fn int(&mut self, v: usize) -> anyhow::Result<()> {
        let v = i32::try_from(v).map_err(|_| anyhow::anyhow!("write_pt: {v} exceeds BININT"))?;
        self.out.push(b'J');
        self.out.extend_from_slice(&v.to_le_bytes());
        Ok(())
    }

    fn int_tuple(&mut self, vs: &[usize]) -> anyhow::Result<()> {
        self.out.push(b'(');
        for &v in vs {
            self.int(v)?;
        }
        self.out.push(b't');
        Ok(())
    }

    /// `name: _rebuild_tensor_v2(storage, 0, size, stride, False, {})` with the storage a
    /// persistent id `('storage', torch.<Class>, key, 'cpu', numel)`.
    fn tensor(&mut self, name: &str, key: &str, t: &Tensor) -> anyhow::Result<()> {
        let class = match t.dtype() {
            DType::F32 => "FloatStorage",
            DType::F64 => "DoubleStorage",
            DType::F16 => "HalfStorage",
            DType::BF16 => "BFloat16Storage",
            DType::I64 => "LongStorage",
            DType::U8 => "ByteStorage",
            other => anyhow::bail!("write_pt: dtype {other:?} has no PyTorch storage class here"),
        };
        let dims = t.dims();
        let strides: Vec<usize> = (0..dims.len()).map(|i| dims[i + 1..].iter().product()).collect();
        self.unicode(name);
        self.global("torch._utils", "_rebuild_tensor_v2");
        self.out.push(b'(');
        self.out.push(b'(');
        self.unicode("storage");
        self.global("torch", class);
        self.unicode(key);
        self.unicode("cpu");
        self.int(t.elem_count())?;
        self.out.extend_from_slice(b"tQ"); // TUPLE, BINPERSID
        self.int(0)?;
        self.int_tuple(dims)?;
        self.int_tuple(&strides)?;
        self.out.extend_from_slice(&[0x89, b'}', b't', b'R']); // False, {}, TUPLE, REDUCE
        Ok(())
    }

    fn finish(mut self) -> Vec<u8> {
        self.out.extend_from_slice(b"u."); // SETITEMS, STOP
        self.out
    }
}

/// Best seconds of each way of loading one file.
struct LoadTimes {
    /// candle's own reader (`candle::pickle::read_all`), what the loader used before the checks.
    candle_s: f64,
    none_s: f64,
    all_s: f64,
    crc_s: f64,
    finite_s: f64,
}

/// Seconds this thread has run on a CPU (Linux: `/proc/thread-self/schedstat`), else wall
/// seconds since an arbitrary start. The loader is single-threaded, so on a shared machine this
/// is its cost without the time other processes held the CPU.
fn thread_cpu_s() -> f64 {
    let on_cpu_ns = std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|ns| ns.parse::<u64>().ok()));
    match on_cpu_ns {
        Some(ns) => ns as f64 * 1e-9,
        None => {
            static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
            START.get_or_init(Instant::now).elapsed().as_secs_f64()
        }
    }
}

/// Best-of-[`RUNS`] CPU seconds of each way of loading `path`.
fn time_loads(path: &Path) -> anyhow::Result<LoadTimes> {
    let modes = [
        LoadChecks::NONE,
        LoadChecks::ALL,
        LoadChecks { crc: true, finite: false },
        LoadChecks { crc: false, finite: true },
    ];
    let mut best = [f64::INFINITY; 4];
    let mut candle_s = f64::INFINITY;
    for _ in 0..RUNS {
        let t0 = thread_cpu_s();
        drop(candle::pickle::read_all(path)?);
        candle_s = candle_s.min(thread_cpu_s() - t0);
        for (i, &checks) in modes.iter().enumerate() {
            let t0 = thread_cpu_s();
            let ckpt = Checkpoint::load_with(path, &Device::Cpu, checks)?;
            best[i] = best[i].min(thread_cpu_s() - t0);
            drop(ckpt);
        }
    }
    Ok(LoadTimes { candle_s, none_s: best[0], all_s: best[1], crc_s: best[2], finite_s: best[3] })
}

/// Every tensor of a checkpoint built in memory, in name order.
fn sorted_tensors(ckpt: &Checkpoint) -> anyhow::Result<Vec<(String, Tensor)>> {
    let mut names: Vec<String> = ckpt.names().map(str::to_string).collect();
    names.sort();
    names.into_iter().map(|n| Ok((n.clone(), ckpt.get_unchecked(&n)?))).collect()
}

pub fn run(opts: &BenchOptions) -> anyhow::Result<serde_json::Value> {
    let cfg = ModelConfig::full_size();
    let dir = std::env::temp_dir().join(format!("lectern-bench-checkpoint-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = run_in(&cfg, opts, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run_in(cfg: &ModelConfig, opts: &BenchOptions, dir: &Path) -> anyhow::Result<serde_json::Value> {
    let cpu = Device::Cpu;
    let seed = opts.weights_seed;
    println!(
        "checkpoint bench: full-size seeded random weights written as .pt, loaded on the CPU \
         from the page cache; CPU seconds of the loading thread, best of {RUNS}"
    );
    println!(
        "{:<9} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "file", "MB", "candle s", "none s", "all s", "crc s", "finite s", "overhead"
    );
    type Build<'a> = Box<dyn Fn() -> anyhow::Result<Vec<(String, Tensor)>> + 'a>;
    let builders: [(&str, Build); 3] = [
        (
            "llm.pt",
            Box::new(|| sorted_tensors(&crate::lm::random_checkpoint(cfg, seed, &[0], &cpu)?)),
        ),
        ("flow.pt", Box::new(|| sorted_tensors(&crate::flow::random_flow(&cfg.flow, seed, &cpu)?))),
        (
            "hift.pt",
            Box::new(|| sorted_tensors(crate::hift::random_weights(cfg, seed, &cpu)?.checkpoint())),
        ),
    ];
    let mut rows = Vec::new();
    for (file, build) in builders {
        let path = dir.join(file);
        write_pt(&path, &build()?)?;
        let mb = std::fs::metadata(&path)?.len() as f64 / 1e6;
        let t = time_loads(&path)?;
        let overhead = t.all_s / t.none_s - 1.0;
        println!(
            "{file:<9} {mb:>8.1} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>8.1}%",
            t.candle_s,
            t.none_s,
            t.all_s,
            t.crc_s,
            t.finite_s,
            100.0 * overhead
        );
        rows.push(serde_json::json!({
            "file": file, "mb": mb, "candle_read_all_s": t.candle_s, "no_checks_s": t.none_s, "all_checks_s": t.all_s,
            "crc_only_s": t.crc_s, "finite_only_s": t.finite_s, "overhead": overhead,
        }));
        std::fs::remove_file(&path)?;
    }
    Ok(serde_json::json!({
        "bench": "checkpoint", "device": "cpu", "runs": RUNS, "weights_seed": seed, "files": rows,
    }))
}
