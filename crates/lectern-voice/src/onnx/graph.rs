//! Loading an ONNX graph into an evaluation order, and running it.
//!
//! At load every value name gets a slot, initializers and `Constant` nodes become tensors, every
//! node is checked against the operators and attributes [`ops`] implements, and each slot's last
//! reader is found so that a run can drop intermediates as soon as they are dead (CAM++ on 30 s
//! would otherwise hold all of its ~2700 intermediates at once). A run then only evaluates the
//! nodes in file order: nothing is planned or optimised per call.

use std::collections::HashMap;
use std::path::Path;

use candle::{DType, Tensor};

use super::node::Node;
use super::ops::{self, OpError};
use super::proto::{self, DataType, GraphProto, ModelProto, NodeProto};
use super::tensor::tensor_from_proto;

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
