//! Loading an ONNX graph into an evaluation order, and running it.
//!
//! At load every value name gets a slot, initializers and `Constant` nodes become tensors, every
//! node is checked against the operators and attributes [`ops`] implements, and each slot's last
//! reader is found so that a run can drop intermediates as soon as they are dead (CAM++ on 30 s
//! would otherwise hold all of its ~2700 intermediates at once). A run then only evaluates the
//! nodes in file order: nothing is planned or optimised per call.

use std::collections::HashMap;
use std::path::Path;

use candle::{DType, Device, Tensor};

use super::ops::{self, OpError};
use super::proto::{
    self, AttributeProto, DataType, GraphProto, ModelProto, NodeProto, TensorProto,
};

/// One operator application, its value names resolved to slots.
pub(super) struct Node {
    pub name: String,
    pub op_type: String,
    /// `None` for an omitted optional input (empty name in the file).
    pub inputs: Vec<Option<usize>>,
    /// `None` for an omitted optional output.
    pub outputs: Vec<Option<usize>>,
    pub attributes: Vec<AttributeProto>,
    /// Slots whose last reader is this node: dropped right after it runs.
    free_after: Vec<usize>,
}

impl Node {
    /// `node `name` (Op)`, for error messages.
    pub fn describe(&self) -> String {
        format!("node `{}` ({})", self.name, self.op_type)
    }
}

/// A loaded graph, ready to run any number of times (from any thread).
pub(super) struct Graph {
    /// Version of the default-domain operator set the file is written against.
    pub opset: i64,
    nodes: Vec<Node>,
    slot_count: usize,
    /// Initializers and folded `Constant` outputs.
    constants: Vec<(usize, Tensor)>,
    /// Slots of the runtime inputs, in declaration order.
    inputs: Vec<usize>,
    /// Slots of the graph outputs and their declared element types.
    outputs: Vec<(usize, Option<DataType>)>,
}

/// Name → slot, handing out a new slot for each new name.
#[derive(Default)]
struct Slots {
    by_name: HashMap<String, usize>,
}

impl Slots {
    fn get(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    fn define(&mut self, name: &str) -> usize {
        let next = self.by_name.len();
        *self.by_name.entry(name.to_string()).or_insert(next)
    }
}

impl Graph {
    /// Checks and indexes the model's graph; `dir` resolves external tensor data.
    pub fn load(model: &ModelProto, dir: &Path) -> Result<Self, String> {
        let opset = default_opset(model)?;
        let graph = model.graph.as_ref().ok_or("no graph")?;
        let mut slots = Slots::default();
        let mut constants = Vec::new();
        for init in &graph.initializer {
            let tensor = tensor_from_proto(init, dir)
                .map_err(|e| format!("initializer `{}`: {e}", init.name))?;
            constants.push((slots.define(&init.name), tensor));
        }
        let inputs = runtime_input_names(graph).map(|name| slots.define(name)).collect();
        let mut nodes = Vec::with_capacity(graph.node.len());
        for node in &graph.node {
            let node = resolve_node(node, &mut slots)?;
            ops::check_supported(&node).map_err(|e| format!("{}: {e}", node.describe()))?;
            if node.op_type == "Constant" {
                let value =
                    ops::constant(&node, dir).map_err(|e| format!("{}: {e}", node.describe()))?;
                if let Some(slot) = node.outputs.first().copied().flatten() {
                    constants.push((slot, value));
                }
                continue;
            }
            nodes.push(node);
        }
        let mut outputs = Vec::new();
        for out in &graph.output {
            let slot = slots.get(&out.name).ok_or_else(|| {
                format!("graph output `{}` is not produced by any node", out.name)
            })?;
            outputs.push((slot, declared_elem(out)));
        }
        let keep: Vec<usize> = outputs.iter().map(|(slot, _)| *slot).collect();
        mark_last_uses(&mut nodes, &keep);
        Ok(Self { opset, nodes, slot_count: slots.by_name.len(), constants, inputs, outputs })
    }

    /// Runs the graph on the runtime inputs (in declaration order); returns the outputs, each
    /// in its declared element type. Errors name the failing node.
    pub fn run(&self, inputs: Vec<Tensor>) -> Result<Vec<Tensor>, String> {
        if inputs.len() != self.inputs.len() {
            return Err(format!(
                "{} inputs given, the graph takes {}",
                inputs.len(),
                self.inputs.len()
            ));
        }
        let mut values: Vec<Option<Tensor>> = vec![None; self.slot_count];
        for (slot, tensor) in &self.constants {
            values[*slot] = Some(tensor.clone());
        }
        for (slot, tensor) in self.inputs.iter().zip(inputs) {
            values[*slot] = Some(tensor);
        }
        for node in &self.nodes {
            let args: Vec<Option<&Tensor>> =
                node.inputs.iter().map(|slot| slot.and_then(|s| values[s].as_ref())).collect();
            let results = ops::run(node, &args, self.opset)
                .map_err(|OpError(e)| format!("{}: {e}", node.describe()))?;
            for (slot, value) in node.outputs.iter().zip(results) {
                if let Some(slot) = slot {
                    values[*slot] = Some(value);
                }
            }
            for &slot in &node.free_after {
                values[slot] = None;
            }
        }
        self.outputs
            .iter()
            .map(|(slot, declared)| {
                let value = values[*slot].take().ok_or("a graph output was not computed")?;
                to_declared(value, *declared)
            })
            .collect()
    }
}

/// The default domain's opset; nodes of any other domain are refused when they are resolved.
fn default_opset(model: &ModelProto) -> Result<i64, String> {
    model
        .opset_import
        .iter()
        .find(|o| o.domain.is_empty() || o.domain == "ai.onnx")
        .map(|o| o.version)
        .ok_or_else(|| "no import of the default ONNX operator set".to_string())
}

/// Graph inputs that are fed at run time (older exporters also list initializers as inputs).
pub(super) fn runtime_input_names(graph: &GraphProto) -> impl Iterator<Item = &str> {
    graph
        .input
        .iter()
        .filter(|i| !graph.initializer.iter().any(|init| init.name == i.name))
        .map(|i| i.name.as_str())
}

/// Resolves a node's value names to slots. Every input must already be defined: ONNX requires
/// graphs to be topologically sorted, and a file that is not is refused rather than reordered.
fn resolve_node(node: &NodeProto, slots: &mut Slots) -> Result<Node, String> {
    let describe = || format!("node `{}` ({})", node.name, node.op_type);
    if !(node.domain.is_empty() || node.domain == "ai.onnx") {
        return Err(format!("{}: operator domain `{}` is not supported", describe(), node.domain));
    }
    let mut inputs = Vec::with_capacity(node.input.len());
    for name in &node.input {
        if name.is_empty() {
            inputs.push(None);
            continue;
        }
        let slot = slots.get(name).ok_or_else(|| {
            format!(
                "{} reads `{name}` before any node produces it (the graph is not topologically \
                 sorted, or the value is missing)",
                describe()
            )
        })?;
        inputs.push(Some(slot));
    }
    let outputs =
        node.output.iter().map(|name| (!name.is_empty()).then(|| slots.define(name))).collect();
    Ok(Node {
        name: node.name.clone(),
        op_type: node.op_type.clone(),
        inputs,
        outputs,
        attributes: node.attribute.clone(),
        free_after: Vec::new(),
    })
}

/// Gives each node the slots it is the last to touch (read or, for unused outputs, write),
/// except the graph outputs.
fn mark_last_uses(nodes: &mut [Node], keep: &[usize]) {
    let mut last: HashMap<usize, usize> = HashMap::new();
    for (ix, node) in nodes.iter().enumerate() {
        for slot in node.inputs.iter().chain(&node.outputs).flatten() {
            last.insert(*slot, ix);
        }
    }
    for (slot, ix) in last {
        if !keep.contains(&slot) {
            nodes[ix].free_after.push(slot);
        }
    }
}

/// Declared element type of a graph output.
fn declared_elem(info: &proto::ValueInfoProto) -> Option<DataType> {
    match info.r#type.as_ref()?.value.as_ref()? {
        proto::type_proto::Value::TensorType(t) => DataType::try_from(t.elem_type).ok(),
    }
}

/// Converts an output to the element type the file declares (values are computed as i64 for
/// every integer type; the tokenizer's ids are declared int32).
fn to_declared(value: Tensor, declared: Option<DataType>) -> Result<Tensor, String> {
    let dtype = match declared {
        Some(DataType::Int32) => DType::I32,
        Some(DataType::Int64) => DType::I64,
        Some(DataType::Float) => DType::F32,
        Some(DataType::Bool) => DType::U8,
        _ => return Ok(value),
    };
    value.to_dtype(dtype).map_err(|e| e.to_string())
}

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

/// A free-standing node for the operator tests.
#[cfg(test)]
pub(super) fn test_node(op_type: &str, attributes: Vec<AttributeProto>) -> Node {
    Node {
        name: format!("test_{op_type}"),
        op_type: op_type.into(),
        inputs: Vec::new(),
        outputs: Vec::new(),
        attributes,
        free_after: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    /// Every intermediate a node writes is dropped by some node, so a run holds only the live
    /// values (CAM++ on 30 s would otherwise keep ~2700 of them); the graph outputs are kept.
    #[test]
    fn every_intermediate_is_freed_after_its_last_use() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/voice-prompt");
        for file in ["campplus_tiny.onnx", "speech_tokenizer_v3_tiny.onnx"] {
            let bytes = std::fs::read(dir.join(file)).unwrap();
            let graph = Graph::load(&ModelProto::decode(bytes.as_slice()).unwrap(), &dir).unwrap();
            let freed: Vec<usize> = graph.nodes.iter().flat_map(|n| n.free_after.clone()).collect();
            let kept: Vec<usize> = graph.outputs.iter().map(|(slot, _)| *slot).collect();
            for node in &graph.nodes {
                for slot in node.outputs.iter().flatten() {
                    assert_eq!(
                        freed.contains(slot),
                        !kept.contains(slot),
                        "{file}: {}",
                        node.describe()
                    );
                }
            }
        }
    }
}
