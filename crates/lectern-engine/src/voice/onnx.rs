//! CosyVoice3's two prompt ONNX models, run in pure Rust with [tract](https://github.com/sonos/tract).
//!
//! * [`SpeechTokenizer`] runs `speech_tokenizer_v3.onnx`: whisper log-mel (128, T) → speech
//!   token ids (upstream `_extract_speech_token`).
//! * [`SpeakerEncoder`] runs `campplus.onnx`: mean-normalised Kaldi fbank (frames, 80) → the
//!   192-d speaker embedding (upstream `_extract_spk_embedding`).
//!
//! Both files have a symbolic time axis. Each model is parsed once at load (the protobuf is
//! decoded, checked against the expected signature and patched, see
//! [`ort_average_pool_semantics`]); every call then types and optimises a plan for its concrete
//! input length. That keeps every shape in the graph concrete (no symbolic arithmetic through
//! CAM++'s pooling/expand chain) at the cost of re-optimising per call. Why not one symbolic plan
//! built at load: tract can build and run one for both graphs, but a symbolic CAM++ plan runs
//! much slower than a concrete one. Measured on the stand-ins (2 shared cores): CAM++ at 661
//! frames costs 0.78 s to plan + 0.12 s to run concretely vs 0.41 s per run symbolically (after
//! a 1.3 s build at load); at 2998 frames (30 s) 1.6 s in all vs 2.4 s per run. The tokenizer
//! is cheap either way (663 frames: 40 ms plan + 16 ms run vs 24 ms symbolic).
//!
//! The results are ONNX Runtime's (what upstream returns), not the PyTorch modules': see
//! [`ort_average_pool_semantics`] for the one place where the two differ.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tract_onnx::pb;
use tract_onnx::pb::attribute_proto::AttributeType;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::pb::tensor_shape_proto::dimension::Value as DimValue;
use tract_onnx::pb::type_proto::Value as TypeValue;
use tract_onnx::prelude::*;

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
    Tract { path: PathBuf, stage: &'static str, reason: String },
}

/// Runs `speech_tokenizer_v3.onnx` (inputs `feats` f32 [1, 128, T], `feats_length` int [1];
/// output 0: the token ids, int32 or int64).
pub struct SpeechTokenizer {
    model: OnnxModel,
    /// Element type of the `feats_length` input as declared by the file (int32 in upstream's
    /// export, but a re-export may say int64).
    length_type: DatumType,
}

impl SpeechTokenizer {
    /// Loads `speech_tokenizer_v3.onnx` (or a stand-in with the same signature).
    pub fn load(path: &Path) -> Result<Self, OnnxError> {
        let proto = read_proto(path)?;
        let length_type = check_tokenizer_signature(&proto)
            .map_err(|reason| signature_error(path, "speech tokenizer", reason))?;
        let model = OnnxModel::parse(path, proto)?;
        Ok(Self { model, length_type })
    }

    /// feats: (128, T) row-major whisper log-mel; returns the speech token ids (accepts int32 or
    /// int64 outputs, rank 2 or 3, as the README says).
    pub fn tokens(&self, feats: &[f32], frames: usize) -> Result<Vec<i64>, OnnxError> {
        check_input_len(&self.model.path, feats.len(), TOKENIZER_MELS, frames)?;
        let feats = tensor_from(&self.model.path, &[1, TOKENIZER_MELS, frames], feats)?;
        let length = length_tensor(self.length_type, frames);
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
        let proto = read_proto(path)?;
        check_campplus_signature(&proto)
            .map_err(|reason| signature_error(path, "CAM++ speaker encoder", reason))?;
        let model = OnnxModel::parse(path, proto)?;
        Ok(Self { model })
    }

    /// fbank: (frames, 80) row-major, already mean-normalised; returns the 192-d embedding (not
    /// normalised).
    pub fn embed(&self, fbank: &[f32], frames: usize) -> Result<Vec<f32>, OnnxError> {
        check_input_len(&self.model.path, fbank.len(), CAMPPLUS_MELS, frames)?;
        let input = tensor_from(&self.model.path, &[1, frames, CAMPPLUS_MELS], fbank)?;
        let outputs = self.model.run(vec![input])?;
        let out = &outputs[0];
        let values: Vec<f32> = plain_values(&self.model.path, out, "reading the embedding")?;
        if values.len() != EMBEDDING_SIZE {
            return Err(OnnxError::Unsupported {
                path: self.model.path.clone(),
                reason: format!(
                    "embedding has shape {:?}, expected [1, {EMBEDDING_SIZE}]",
                    out.shape()
                ),
            });
        }
        Ok(values)
    }
}

/// A parsed (and patched) ONNX graph, kept in tract's inference form so that each call can give
/// it concrete input shapes before typing and optimisation.
struct OnnxModel {
    path: PathBuf,
    model: InferenceModel,
}

impl OnnxModel {
    /// Applies the ORT pooling rewrite and lets tract translate the protobuf into its graph.
    /// External tensor data, if any, is resolved relative to the file's directory.
    fn parse(path: &Path, mut proto: pb::ModelProto) -> Result<Self, OnnxError> {
        if let Some(graph) = proto.graph.as_mut() {
            ort_average_pool_semantics(graph)
                .map_err(|reason| OnnxError::Unsupported { path: path.to_path_buf(), reason })?;
        }
        let dir = path.parent().and_then(Path::to_str);
        let parsed = tract_onnx::onnx()
            .parse(&proto, dir)
            .map_err(|e| tract_error(path, "parsing the graph", e))?;
        if !parsed.unresolved_inputs.is_empty() {
            return Err(OnnxError::Unsupported {
                path: path.to_path_buf(),
                reason: format!("unresolved inputs {:?}", parsed.unresolved_inputs),
            });
        }
        Ok(Self { path: path.to_path_buf(), model: parsed.model })
    }

    /// Builds a plan for exactly these input shapes and runs it once.
    ///
    /// The plan is rebuilt per call because the time axis is symbolic in the files: pinning it
    /// lets tract fold every `Shape`/`Gather`/`Expand` chain into constants before optimising.
    fn run(&self, inputs: Vec<Tensor>) -> Result<TVec<TValue>, OnnxError> {
        let plan = self.plan(&inputs)?;
        let inputs = inputs.into_iter().map(TValue::from).collect();
        plan.run(inputs).map_err(|e| tract_error(&self.path, "running the model", e))
    }

    /// Types and optimises a clone of the parsed graph for the given concrete inputs.
    fn plan(&self, inputs: &[Tensor]) -> Result<Arc<TypedRunnableModel>, OnnxError> {
        let mut model = self.model.clone();
        for (ix, input) in inputs.iter().enumerate() {
            let fact = InferenceFact::dt_shape(input.datum_type(), input.shape());
            model
                .set_input_fact(ix, fact)
                .map_err(|e| tract_error(&self.path, "setting the input shape", e))?;
        }
        model
            .into_optimized()
            .map_err(|e| tract_error(&self.path, "optimising the graph", e))?
            .into_runnable()
            .map_err(|e| tract_error(&self.path, "building the plan", e))
    }
}

/// Rewrites every `AveragePool(ceil_mode=1, count_include_pad=1)` so that tract computes what
/// ONNX Runtime computes.
///
/// Why: CAM++'s context pooling is `avg_pool1d(kernel 100, stride 100, ceil_mode=True)`, exported
/// as 52 such nodes. ONNX Runtime divides the partial last window by the **kernel size** (100);
/// PyTorch — and tract, which follows the ONNX reference — divide it by the number of real
/// frames. Upstream's embedding is ORT's, and the two differ by ~2 % unless ⌈Tk/2⌉ is a multiple
/// of 100 (fixtures/voice-prompt, trap 1).
///
/// How: ORT's rule is exactly "zero-pad the end so that the last window is whole, then divide
/// every window by the kernel". So each such node gets `stride − 1` more end padding per axis and
/// `ceil_mode = 0`. With `count_include_pad = 1` the padding zeros count in the divisor, and
/// `⌊(L + b + a + s − 1 − k)/s⌋ + 1 = ⌈(L + b + a − k)/s⌉ + 1` keeps the output length. The
/// rewrite is only exact when no ceil-mode window can start in the end padding, which holds for
/// `kernel ≥ stride` and no end padding (CAM++: 100/100, pads 0); anything else is refused
/// rather than silently computed with the wrong divisor. `count_include_pad = 0` pools already
/// agree (both divide by the real count) and are left alone. Returns how many nodes were changed.
fn ort_average_pool_semantics(graph: &mut pb::GraphProto) -> Result<usize, String> {
    let mut rewritten = 0;
    for node in graph.node.iter_mut().filter(|n| n.op_type == "AveragePool") {
        if int_attr(node, "ceil_mode") != Some(1) || int_attr(node, "count_include_pad") != Some(1)
        {
            continue;
        }
        let kernel = ints_attr(node, "kernel_shape").unwrap_or_default();
        let rank = kernel.len();
        let strides = ints_attr(node, "strides").unwrap_or_else(|| vec![1; rank]);
        let pads = ints_attr(node, "pads").unwrap_or_else(|| vec![0; 2 * rank]);
        let auto_pad = str_attr(node, "auto_pad");
        let plain = matches!(auto_pad.as_deref(), None | Some("NOTSET"))
            && strides.len() == rank
            && pads.len() == 2 * rank
            && pads[rank..].iter().all(|&p| p == 0)
            && kernel.iter().zip(&strides).all(|(k, s)| k >= s && *s >= 1);
        if !plain {
            return Err(format!(
                "AveragePool `{}` (ceil_mode=1, count_include_pad=1, kernel {kernel:?}, strides \
                 {strides:?}, pads {pads:?}, auto_pad {auto_pad:?}) has no exact ONNX Runtime \
                 equivalent here",
                node.name
            ));
        }
        let mut new_pads = pads[..rank].to_vec();
        new_pads.extend(strides.iter().map(|s| s - 1));
        set_ints_attr(node, "pads", new_pads);
        set_int_attr(node, "ceil_mode", 0);
        rewritten += 1;
    }
    Ok(rewritten)
}

/// Value of an integer attribute, if present.
fn int_attr(node: &pb::NodeProto, name: &str) -> Option<i64> {
    node.attribute.iter().find(|a| a.name == name).map(|a| a.i)
}

/// Value of an integer-list attribute, if present.
fn ints_attr(node: &pb::NodeProto, name: &str) -> Option<Vec<i64>> {
    node.attribute.iter().find(|a| a.name == name).map(|a| a.ints.clone())
}

/// Value of a string attribute, if present.
fn str_attr(node: &pb::NodeProto, name: &str) -> Option<String> {
    node.attribute
        .iter()
        .find(|a| a.name == name)
        .map(|a| String::from_utf8_lossy(&a.s).into_owned())
}

/// Sets (or adds) an integer attribute.
fn set_int_attr(node: &mut pb::NodeProto, name: &str, value: i64) {
    let attr = attr_mut(node, name, AttributeType::Int);
    attr.i = value;
}

/// Sets (or adds) an integer-list attribute.
fn set_ints_attr(node: &mut pb::NodeProto, name: &str, values: Vec<i64>) {
    let attr = attr_mut(node, name, AttributeType::Ints);
    attr.ints = values;
}

/// The named attribute, created with the given type when missing.
fn attr_mut<'a>(
    node: &'a mut pb::NodeProto,
    name: &str,
    kind: AttributeType,
) -> &'a mut pb::AttributeProto {
    let ix = match node.attribute.iter().position(|a| a.name == name) {
        Some(ix) => ix,
        None => {
            node.attribute.push(pb::AttributeProto {
                name: name.to_string(),
                r#type: kind as i32,
                ..Default::default()
            });
            node.attribute.len() - 1
        }
    };
    &mut node.attribute[ix]
}

/// Reads and decodes the protobuf, turning a missing file and a non-ONNX file into clear errors.
fn read_proto(path: &Path) -> Result<pb::ModelProto, OnnxError> {
    let bytes =
        std::fs::read(path).map_err(|cause| OnnxError::Io { path: path.to_path_buf(), cause })?;
    let not_onnx = |reason: String| OnnxError::NotOnnx { path: path.to_path_buf(), reason };
    let proto = tract_onnx::onnx()
        .proto_model_for_read(&mut bytes.as_slice())
        .map_err(|e| not_onnx(format!("protobuf decoding failed: {e:#}")))?;
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
    fn of(info: &pb::ValueInfoProto) -> Self {
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
                other.map(|e| e.as_str_name()),
                accepted.iter().map(|e| e.as_str_name()).collect::<Vec<_>>()
            )),
        }
    }
}

/// Formats dims with `?` for symbolic ones.
fn dims_str(dims: &[Option<i64>]) -> String {
    let parts: Vec<String> =
        dims.iter().map(|d| d.map_or_else(|| "?".to_string(), |v| v.to_string())).collect();
    format!("[{}]", parts.join(", "))
}

/// Graph inputs that are fed at run time (older exporters also list initializers as inputs).
fn runtime_inputs(graph: &pb::GraphProto) -> Vec<ValueSig> {
    graph
        .input
        .iter()
        .filter(|i| !graph.initializer.iter().any(|init| init.name == i.name))
        .map(ValueSig::of)
        .collect()
}

/// Names of a signature list, for error messages.
fn names(sigs: &[ValueSig]) -> String {
    sigs.iter().map(|s| format!("`{}`", s.name)).collect::<Vec<_>>().join(", ")
}

/// The tokenizer takes (feats f32 [1|?, 128, T], feats_length int [1|?]) and returns integer
/// ids first. Returns the declared length type.
fn check_tokenizer_signature(proto: &pb::ModelProto) -> Result<DatumType, String> {
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
    Ok(match inputs[1].elem {
        Some(DataType::Int64) => DatumType::I64,
        _ => DatumType::I32,
    })
}

/// CAM++ takes one f32 [B, frames, 80] input and returns f32 [B, 192] first.
fn check_campplus_signature(proto: &pb::ModelProto) -> Result<(), String> {
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

/// Formats a tract error with its whole cause chain.
fn tract_error(path: &Path, stage: &'static str, e: impl std::fmt::Display) -> OnnxError {
    OnnxError::Tract { path: path.to_path_buf(), stage, reason: format!("{e:#}") }
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

/// Copies the caller's row-major data into a tract tensor of the given shape.
fn tensor_from(path: &Path, shape: &[usize], data: &[f32]) -> Result<Tensor, OnnxError> {
    Tensor::from_shape(shape, data).map_err(|e| tract_error(path, "building the input", e))
}

/// The `feats_length` input: `[frames]` in the file's declared integer type.
fn length_tensor(dt: DatumType, frames: usize) -> Tensor {
    if dt == DatumType::I64 { tensor1(&[frames as i64]) } else { tensor1(&[frames as i32]) }
}

/// Flattens the tokenizer's output (upstream: `.flatten().tolist()`), accepting int32 or int64
/// of rank 2 or 3.
fn token_ids(path: &Path, out: &TValue) -> Result<Vec<i64>, OnnxError> {
    if !(2..=3).contains(&out.rank()) {
        return Err(OnnxError::Unsupported {
            path: path.to_path_buf(),
            reason: format!("token output has shape {:?}, expected rank 2 or 3", out.shape()),
        });
    }
    let stage = "reading the tokens";
    match out.datum_type() {
        DatumType::I32 => {
            let ids: Vec<i32> = plain_values(path, out, stage)?;
            Ok(ids.into_iter().map(i64::from).collect())
        }
        DatumType::I64 => plain_values(path, out, stage),
        other => Err(OnnxError::Unsupported {
            path: path.to_path_buf(),
            reason: format!("token output is {other:?}, expected int32 or int64"),
        }),
    }
}

/// Copies a tensor's elements out in row-major order (tract may keep outputs in non-plain
/// storage, so they are materialised first).
fn plain_values<D: Datum + Copy>(
    path: &Path,
    t: &Tensor,
    stage: &'static str,
) -> Result<Vec<D>, OnnxError> {
    let view = t.try_as_plain_ram().map_err(|e| tract_error(path, stage, e))?;
    let values = view.as_slice::<D>().map_err(|e| tract_error(path, stage, e))?;
    Ok(values.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-node graph holding a single AveragePool with the given attributes.
    fn pool_graph(attrs: Vec<pb::AttributeProto>) -> pb::GraphProto {
        pb::GraphProto {
            node: vec![pb::NodeProto {
                op_type: "AveragePool".into(),
                name: "pool".into(),
                attribute: attrs,
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn int(name: &str, i: i64) -> pb::AttributeProto {
        pb::AttributeProto {
            name: name.into(),
            r#type: AttributeType::Int as i32,
            i,
            ..Default::default()
        }
    }

    fn ints(name: &str, ints: &[i64]) -> pb::AttributeProto {
        pb::AttributeProto {
            name: name.into(),
            r#type: AttributeType::Ints as i32,
            ints: ints.to_vec(),
            ..Default::default()
        }
    }

    #[test]
    fn campplus_pool_gets_end_padding_and_floor_mode() {
        let mut g = pool_graph(vec![
            int("ceil_mode", 1),
            int("count_include_pad", 1),
            ints("kernel_shape", &[100]),
            ints("pads", &[0, 0]),
            ints("strides", &[100]),
        ]);
        assert_eq!(ort_average_pool_semantics(&mut g), Ok(1));
        let node = &g.node[0];
        assert_eq!(int_attr(node, "ceil_mode"), Some(0));
        assert_eq!(ints_attr(node, "pads"), Some(vec![0, 99]));
    }

    #[test]
    fn pools_without_the_discrepancy_are_left_alone() {
        let attrs =
            vec![int("ceil_mode", 1), int("count_include_pad", 0), ints("kernel_shape", &[3])];
        let mut g = pool_graph(attrs.clone());
        assert_eq!(ort_average_pool_semantics(&mut g), Ok(0));
        assert_eq!(g.node[0].attribute, attrs);
    }

    /// Both stand-in CAM++ exports carry the 52 segment-pooling nodes of the real network.
    #[test]
    fn campplus_fixtures_have_52_rewritten_pools() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/voice-prompt");
        for file in ["campplus_tiny.onnx", "campplus_tiny_opset17.onnx"] {
            let mut proto = read_proto(&dir.join(file)).unwrap();
            let graph = proto.graph.as_mut().unwrap();
            assert_eq!(ort_average_pool_semantics(graph), Ok(52), "{file}");
        }
    }

    /// The lead shares the models across threads.
    #[test]
    fn models_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<SpeechTokenizer>();
        check::<SpeakerEncoder>();
    }

    #[test]
    fn inexact_pools_are_refused() {
        let mut g = pool_graph(vec![
            int("ceil_mode", 1),
            int("count_include_pad", 1),
            ints("kernel_shape", &[2]),
            ints("strides", &[3]),
        ]);
        assert!(ort_average_pool_semantics(&mut g).unwrap_err().contains("`pool`"));
    }
}
