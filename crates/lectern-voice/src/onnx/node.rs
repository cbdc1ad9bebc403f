//! [`Node`], one resolved operator application: built by [`super::graph`], read by the
//! operators in [`super::ops`]. A leaf module, so the operators do not depend on the graph.

use super::proto::AttributeProto;

/// One operator application, its value names resolved to slots.
pub(super) struct Node {
    pub name: String,
    pub op_type: String,
    /// `None` for an omitted optional input (empty name in the file).
    pub inputs: Vec<Option<usize>>,
    /// `None` for an omitted optional output.
    pub outputs: Vec<Option<usize>>,
    pub attributes: Vec<AttributeProto>,
    /// Slots whose last reader is this node: dropped right after it runs (set by the graph).
    pub(super) free_after: Vec<usize>,
}

impl Node {
    /// `node `name` (Op)`, for error messages.
    pub fn describe(&self) -> String {
        format!("node `{}` ({})", self.name, self.op_type)
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
