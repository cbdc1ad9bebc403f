//! CosyVoice3's two prompt ONNX models, run by a small ONNX interpreter of Lectern's own on
//! candle's CPU tensors.
//!
//! * [`SpeechTokenizer`] runs `speech_tokenizer_v3.onnx`: whisper log-mel (128, T) → speech
//!   token ids (upstream `_extract_speech_token`).
//! * [`SpeakerEncoder`] runs `campplus.onnx`: mean-normalised Kaldi fbank (frames, 80) → the
//!   192-d speaker embedding (upstream `_extract_spk_embedding`).
//!
//! Each file is decoded once at load (`proto`: hand-written prost messages), checked against
//! the expected signature, and indexed into an evaluation order (`graph`); a call then runs
//! the nodes in file order (`ops`: one function per operator), dropping each intermediate
//! after its last use. Nothing is planned per call, and the symbolic time axis needs no shape
//! inference: every shape is concrete once the input is.
//!
//! Why not a crate: tract (used before) cost ~450 CPU-seconds of a clean build for two small
//! graphs; candle-onnx 0.11.1 needs `protoc` at build time and lacks 1-D `AveragePool` with
//! `ceil_mode`, `ReduceProd` and `Round`; `ort` needs a native ONNX Runtime download.
//!
//! The results are ONNX Runtime's (what upstream returns), not the PyTorch modules': see
//! `ops::average_pool` for the one place where the two differ.

mod graph;
mod node;
mod ops;
mod proto;
mod tensor;

use std::path::{Path, PathBuf};

use candle::{DType, Device, Tensor};
use prost::Message;

use graph::Graph;
use proto::DataType;
use proto::tensor_shape_proto::dimension::Value as DimValue;
use proto::type_proto::Value as TypeValue;

/// Mel bins of the tokenizer input (whisper large-v3 log-mel).
pub const TOKENIZER_MELS: usize = 128;
/// Fbank bins of the CAM++ input.
pub const CAMPPLUS_MELS: usize = 80;
/// Size of the CAM++ speaker embedding.
pub const EMBEDDING_SIZE: usize = 192;

/// Errors from loading or running the prompt ONNX models. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum OnnxError {
    // `cause`, not a `#[source]`: the message shows it (see `text::TextError::Io`).
    #[error("{path}: cannot read ONNX model: {cause}")]
    Io { path: PathBuf, cause: std::io::Error },
    #[error("{path}: not an ONNX model ({reason})")]
    NotOnnx { path: PathBuf, reason: String },
    #[error("{path}: not a {expected} model: {reason}")]
    Signature { path: PathBuf, expected: &'static str, reason: String },
    #[error("{path}: unsupported graph: {reason}")]
    Unsupported { path: PathBuf, reason: String },
    #[error("{path}: bad input: {reason}")]
    Input { path: PathBuf, reason: String },
    #[error("{path}: {stage}: {reason}")]
    Run { path: PathBuf, stage: &'static str, reason: String },
}

/// Runs `speech_tokenizer_v3.onnx` (inputs `feats` f32 `[1, 128, T]`, `feats_length` int `[1]`;
/// output 0: the token ids, int32 or int64).
pub struct SpeechTokenizer {
    model: OnnxModel,
}

impl SpeechTokenizer {
    /// Loads `speech_tokenizer_v3.onnx` (or a stand-in with the same signature).
    pub fn load(path: &Path) -> Result<Self, OnnxError> {
        Ok(Self { model: OnnxModel::load(path, "speech tokenizer", check_tokenizer_signature)? })
    }

    /// feats: (128, T) row-major whisper log-mel; returns the speech token ids (accepts int32 or
    /// int64 outputs, rank 2 or 3, as the README says).
    pub fn tokens(&self, feats: &[f32], frames: usize) -> Result<Vec<i64>, OnnxError> {
        check_input_len(&self.model.path, feats.len(), TOKENIZER_MELS, frames)?;
        let feats = tensor_from(&self.model.path, &[1, TOKENIZER_MELS, frames], feats)?;
        // int32 or int64 in the file: every integer is i64 inside the interpreter.
        let length = Tensor::new(&[frames as i64], &Device::Cpu)
            .map_err(|e| run_error(&self.model.path, "building the input", e))?;
        let outputs = self.model.run(vec![feats, length])?;
        token_ids(&self.model.path, &outputs[0])
    }
}

/// Runs `campplus.onnx` (input f32 [B, frames, 80]; output 0: f32 [B, 192]).
pub struct SpeakerEncoder {
    model: OnnxModel,
}

impl SpeakerEncoder {
    /// Loads `campplus.onnx`.
    pub fn load(path: &Path) -> Result<Self, OnnxError> {
        Ok(Self {
            model: OnnxModel::load(path, "CAM++ speaker encoder", check_campplus_signature)?,
        })
    }

    /// fbank: (frames, 80) row-major, already mean-normalised; returns the 192-d embedding (not
    /// normalised).
    pub fn embed(&self, fbank: &[f32], frames: usize) -> Result<Vec<f32>, OnnxError> {
        check_input_len(&self.model.path, fbank.len(), CAMPPLUS_MELS, frames)?;
        let input = tensor_from(&self.model.path, &[1, frames, CAMPPLUS_MELS], fbank)?;
        let outputs = self.model.run(vec![input])?;
        let out = &outputs[0];
        let values = out
            .flatten_all()
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(|e| run_error(&self.model.path, "reading the embedding", e))?;
        if values.len() != EMBEDDING_SIZE {
            return Err(OnnxError::Unsupported {
                path: self.model.path.clone(),
                reason: format!(
                    "embedding has shape {:?}, expected [1, {EMBEDDING_SIZE}]",
                    out.dims()
                ),
            });
        }
        Ok(values)
    }
}

/// A loaded graph and the file it came from (for error messages).
struct OnnxModel {
    path: PathBuf,
    graph: Graph,
}

impl OnnxModel {
    /// Reads the file, checks its signature as the `expected` model, and indexes the graph.
    fn load(
        path: &Path,
        expected: &'static str,
        check: fn(&proto::ModelProto) -> Result<(), String>,
    ) -> Result<Self, OnnxError> {
        let proto = read_proto(path)?;
        check(&proto).map_err(|reason| signature_error(path, expected, reason))?;
        Self::parse(path, &proto)
    }

    /// Indexes the graph, refusing operators and attributes the interpreter does not implement.
    /// External tensor data, if any, is resolved relative to the file's directory.
    fn parse(path: &Path, proto: &proto::ModelProto) -> Result<Self, OnnxError> {
        let dir = path.parent().unwrap_or(Path::new("."));
        let graph = Graph::load(proto, dir)
            .map_err(|reason| OnnxError::Unsupported { path: path.to_path_buf(), reason })?;
        Ok(Self { path: path.to_path_buf(), graph })
    }

    /// Runs the graph once on concrete inputs.
    fn run(&self, inputs: Vec<Tensor>) -> Result<Vec<Tensor>, OnnxError> {
        self.graph.run(inputs).map_err(|e| run_error(&self.path, "running the model", e))
    }
}

/// Reads and decodes the protobuf, turning a missing file and a non-ONNX file into clear errors.
fn read_proto(path: &Path) -> Result<proto::ModelProto, OnnxError> {
    let bytes =
        std::fs::read(path).map_err(|cause| OnnxError::Io { path: path.to_path_buf(), cause })?;
    let not_onnx = |reason: String| OnnxError::NotOnnx { path: path.to_path_buf(), reason };
    let proto = proto::ModelProto::decode(bytes.as_slice())
        .map_err(|e| not_onnx(format!("protobuf decoding failed: {e}")))?;
    match &proto.graph {
        Some(graph) if !graph.node.is_empty() && !graph.output.is_empty() => Ok(proto),
        _ => Err(not_onnx("no graph in the file".into())),
    }
}

/// Element type and dims (`None` for symbolic) of a graph input or output.
struct ValueSig {
    name: String,
    elem: Option<DataType>,
    dims: Option<Vec<Option<i64>>>,
}

impl ValueSig {
    /// Reads the declared type of a `ValueInfoProto`.
    fn of(info: &proto::ValueInfoProto) -> Self {
        let tensor = info.r#type.as_ref().and_then(|t| match &t.value {
            Some(TypeValue::TensorType(tensor)) => Some(tensor),
            _ => None,
        });
        let elem = tensor.and_then(|t| DataType::try_from(t.elem_type).ok());
        let dims = tensor.and_then(|t| t.shape.as_ref()).map(|shape| {
            shape
                .dim
                .iter()
                .map(|d| match d.value {
                    Some(DimValue::DimValue(v)) => Some(v),
                    _ => None,
                })
                .collect()
        });
        Self { name: info.name.clone(), elem, dims }
    }

    /// Checks the rank and the dims that the file fixes; symbolic dims always pass.
    fn check_dims(&self, expected: &[Option<i64>]) -> Result<(), String> {
        let Some(dims) = &self.dims else { return Ok(()) };
        let fits = dims.len() == expected.len()
            && dims.iter().zip(expected).all(|(d, e)| match (d, e) {
                (Some(d), Some(e)) => d == e,
                _ => true,
            });
        if fits {
            Ok(())
        } else {
            Err(format!(
                "`{}` has shape {}, expected {}",
                self.name,
                dims_str(dims),
                dims_str(expected)
            ))
        }
    }

    /// Checks the element type against the accepted ones.
    fn check_elem(&self, accepted: &[DataType]) -> Result<(), String> {
        match self.elem {
            Some(e) if accepted.contains(&e) => Ok(()),
            other => Err(format!(
                "`{}` has element type {:?}, expected {:?}",
                self.name,
                other.map(type_name),
                accepted.iter().copied().map(type_name).collect::<Vec<_>>()
            )),
        }
    }
}

/// ONNX's name of an element type (`FLOAT`, `INT32`…).
fn type_name(dt: DataType) -> String {
    format!("{dt:?}").to_uppercase()
}

/// Formats dims with `?` for symbolic ones.
fn dims_str(dims: &[Option<i64>]) -> String {
    let parts: Vec<String> =
        dims.iter().map(|d| d.map_or_else(|| "?".to_string(), |v| v.to_string())).collect();
    format!("[{}]", parts.join(", "))
}

/// Graph inputs that are fed at run time (older exporters also list initializers as inputs).
fn runtime_inputs(graph: &proto::GraphProto) -> Vec<ValueSig> {
    let names: Vec<&str> = graph::runtime_input_names(graph).collect();
    graph.input.iter().filter(|i| names.contains(&i.name.as_str())).map(ValueSig::of).collect()
}

/// Names of a signature list, for error messages.
fn names(sigs: &[ValueSig]) -> String {
    sigs.iter().map(|s| format!("`{}`", s.name)).collect::<Vec<_>>().join(", ")
}

/// The tokenizer takes (feats f32 [1|?, 128, T], feats_length int [1|?]) and returns integer
/// ids first.
fn check_tokenizer_signature(proto: &proto::ModelProto) -> Result<(), String> {
    let graph = proto.graph.as_ref().ok_or("no graph")?;
    let inputs = runtime_inputs(graph);
    if inputs.len() != 2 {
        return Err(format!(
            "expected 2 inputs (feats, feats_length), found {} ({})",
            inputs.len(),
            names(&inputs)
        ));
    }
    inputs[0].check_elem(&[DataType::Float])?;
    inputs[0].check_dims(&[Some(1), Some(TOKENIZER_MELS as i64), None])?;
    inputs[1].check_elem(&[DataType::Int32, DataType::Int64])?;
    inputs[1].check_dims(&[Some(1)])?;
    let output = ValueSig::of(&graph.output[0]);
    output.check_elem(&[DataType::Int32, DataType::Int64])?;
    if let Some(dims) = &output.dims
        && !(2..=3).contains(&dims.len())
    {
        return Err(format!("output `{}` has rank {}, expected 2 or 3", output.name, dims.len()));
    }
    Ok(())
}

/// CAM++ takes one f32 [B, frames, 80] input and returns f32 [B, 192] first.
fn check_campplus_signature(proto: &proto::ModelProto) -> Result<(), String> {
    let graph = proto.graph.as_ref().ok_or("no graph")?;
    let inputs = runtime_inputs(graph);
    if inputs.len() != 1 {
        return Err(format!(
            "expected 1 input (fbank [batch, frames, {CAMPPLUS_MELS}]), found {} ({})",
            inputs.len(),
            names(&inputs)
        ));
    }
    inputs[0].check_elem(&[DataType::Float])?;
    inputs[0].check_dims(&[None, None, Some(CAMPPLUS_MELS as i64)])?;
    let output = ValueSig::of(&graph.output[0]);
    output.check_elem(&[DataType::Float])?;
    output.check_dims(&[None, Some(EMBEDDING_SIZE as i64)])
}

/// Wraps a signature mismatch with the file and the model it was loaded as.
fn signature_error(path: &Path, expected: &'static str, reason: String) -> OnnxError {
    OnnxError::Signature { path: path.to_path_buf(), expected, reason }
}

/// An error while building inputs, running the graph or reading its outputs.
fn run_error(path: &Path, stage: &'static str, e: impl std::fmt::Display) -> OnnxError {
    OnnxError::Run { path: path.to_path_buf(), stage, reason: e.to_string() }
}

/// Refuses an empty input or one whose length is not `bins × frames`.
fn check_input_len(path: &Path, len: usize, bins: usize, frames: usize) -> Result<(), OnnxError> {
    if frames == 0 || len != bins * frames {
        return Err(OnnxError::Input {
            path: path.to_path_buf(),
            reason: format!("{len} values for {frames} frames × {bins} bins"),
        });
    }
    Ok(())
}

/// Copies the caller's row-major data into a CPU tensor of the given shape.
fn tensor_from(path: &Path, shape: &[usize], data: &[f32]) -> Result<Tensor, OnnxError> {
    Tensor::from_slice(data, shape, &Device::Cpu)
        .map_err(|e| run_error(path, "building the input", e))
}

/// Flattens the tokenizer's output (upstream: `.flatten().tolist()`), accepting int32 or int64
/// of rank 2 or 3.
fn token_ids(path: &Path, out: &Tensor) -> Result<Vec<i64>, OnnxError> {
    if !(2..=3).contains(&out.rank()) {
        return Err(OnnxError::Unsupported {
            path: path.to_path_buf(),
            reason: format!("token output has shape {:?}, expected rank 2 or 3", out.dims()),
        });
    }
    if !matches!(out.dtype(), DType::I32 | DType::I64) {
        return Err(OnnxError::Unsupported {
            path: path.to_path_buf(),
            reason: format!("token output is {:?}, expected int32 or int64", out.dtype()),
        });
    }
    out.flatten_all()
        .and_then(|t| t.to_dtype(DType::I64))
        .and_then(|t| t.to_vec1::<i64>())
        .map_err(|e| run_error(path, "reading the tokens", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/voice-prompt").join(name)
    }

    /// Both stand-in CAM++ exports carry the 52 segment-pooling nodes of the real network, all
    /// `ceil_mode=1, count_include_pad=1` (the ORT-vs-PyTorch case) and accepted at load.
    #[test]
    fn campplus_fixtures_have_52_ort_pools() {
        for file in ["campplus_tiny.onnx", "campplus_tiny_opset17.onnx"] {
            let proto = read_proto(&fixture(file)).unwrap();
            let graph = proto.graph.as_ref().unwrap();
            let ceil_pools = graph
                .node
                .iter()
                .filter(|n| n.op_type == "AveragePool")
                .filter(|n| {
                    let int = |name: &str| n.attribute.iter().find(|a| a.name == name).map(|a| a.i);
                    int("ceil_mode") == Some(1) && int("count_include_pad") == Some(1)
                })
                .count();
            assert_eq!(ceil_pools, 52, "{file}");
            SpeakerEncoder::load(&fixture(file)).unwrap();
        }
    }

    /// The lead shares the models across threads.
    #[test]
    fn models_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<SpeechTokenizer>();
        check::<SpeakerEncoder>();
    }

    /// A file with an operator the interpreter lacks is refused at load, naming the file, the
    /// node and the operator.
    #[test]
    fn unknown_operator_is_named() {
        let mut proto = read_proto(&fixture("campplus_tiny.onnx")).unwrap();
        let node = &mut proto.graph.as_mut().unwrap().node[3];
        node.op_type = "GridSample".into();
        node.name = "odd_node".into();
        let path = Path::new("/models/campplus.onnx");
        let err = OnnxModel::parse(path, &proto).err().unwrap();
        let msg = err.to_string();
        assert!(matches!(err, OnnxError::Unsupported { .. }), "{err:?}");
        for part in ["/models/campplus.onnx", "`odd_node`", "GridSample"] {
            assert!(msg.contains(part), "{msg}");
        }
    }

    /// A node that reads a value produced only by a later node is refused, not reordered.
    #[test]
    fn unsorted_graph_is_refused() {
        let mut proto = read_proto(&fixture("speech_tokenizer_v3_tiny.onnx")).unwrap();
        let nodes = &mut proto.graph.as_mut().unwrap().node;
        nodes.reverse();
        let err = OnnxModel::parse(Path::new("t.onnx"), &proto).err().unwrap();
        assert!(err.to_string().contains("not topologically sorted"), "{err}");
    }
}
