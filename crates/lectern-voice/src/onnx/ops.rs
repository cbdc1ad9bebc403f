//! The ONNX operators the prompt models use, one small function each, on candle CPU tensors.
//!
//! Values are f32, i64 (every integer type) or u8 (bool). Semantics follow the ONNX operator
//! spec (numpy broadcasting, negative axes, the opset differences noted per op), except
//! `AveragePool`, which follows ONNX Runtime where the two differ (see [`average_pool`]).

use std::path::Path;

use candle::{D, DType, Device, Tensor};

use super::node::Node;
use super::proto::{AttributeProto, AttributeType};
use super::tensor::{internal_dtype, tensor_from_proto};

/// An operator's failure; the graph adds the node's name and type.
#[derive(Debug)]
pub(super) struct OpError(pub String);

impl From<candle::Error> for OpError {
    fn from(e: candle::Error) -> Self {
        Self(e.to_string())
    }
}

impl From<String> for OpError {
    fn from(e: String) -> Self {
        Self(e)
    }
}

type OpResult<T> = Result<T, OpError>;

/// Returns early with a formatted [`OpError`].
macro_rules! fail {
    ($($arg:tt)*) => { return Err(OpError(format!($($arg)*))) };
}

/// The implemented operators and the attributes each accepts; any other op or attribute is
/// refused at load.
const SUPPORTED: &[(&str, &[&str])] = &[
    ("Abs", &[]),
    ("Add", &[]),
    (
        "AveragePool",
        &[
            "auto_pad",
            "ceil_mode",
            "count_include_pad",
            "kernel_shape",
            "pads",
            "strides",
            "dilations",
        ],
    ),
    ("BatchNormalization", &["epsilon", "momentum", "spatial", "training_mode", "is_test"]),
    ("Cast", &["to", "saturate"]),
    ("Concat", &["axis"]),
    ("Constant", &["value", "value_float", "value_floats", "value_int", "value_ints"]),
    ("ConstantOfShape", &["value"]),
    ("Conv", &["auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"]),
    ("Cos", &[]),
    ("Div", &[]),
    ("Equal", &[]),
    ("Erf", &[]),
    ("Exp", &[]),
    ("Expand", &[]),
    ("Gather", &["axis"]),
    ("Gelu", &["approximate"]),
    ("Greater", &[]),
    ("GreaterOrEqual", &[]),
    ("Identity", &[]),
    ("LayerNormalization", &["axis", "epsilon", "stash_type"]),
    ("Less", &[]),
    ("LessOrEqual", &[]),
    ("Log", &[]),
    ("MatMul", &[]),
    ("Mul", &[]),
    ("Neg", &[]),
    ("Not", &[]),
    ("Pad", &["mode", "pads", "value"]),
    ("Pow", &[]),
    ("Range", &[]),
    ("ReduceMean", &["axes", "keepdims", "noop_with_empty_axes"]),
    ("ReduceProd", &["axes", "keepdims", "noop_with_empty_axes"]),
    ("ReduceSum", &["axes", "keepdims", "noop_with_empty_axes"]),
    ("Relu", &[]),
    ("Reshape", &["allowzero"]),
    ("Round", &[]),
    ("Shape", &["start", "end"]),
    ("Sigmoid", &[]),
    ("Sin", &[]),
    ("Slice", &["starts", "ends", "axes"]),
    ("Softmax", &["axis"]),
    ("Sqrt", &[]),
    ("Squeeze", &["axes"]),
    ("Sub", &[]),
    ("Tanh", &[]),
    ("Transpose", &["perm"]),
    ("Unsqueeze", &["axes"]),
    ("Where", &[]),
];

/// Refuses an operator or attribute outside what [`run`] implements, and the pooling cases
/// with no exact ONNX Runtime equivalent.
pub(super) fn check_supported(node: &Node) -> Result<(), String> {
    let Some((_, attrs)) = SUPPORTED.iter().find(|(op, _)| *op == node.op_type) else {
        return Err("operator not supported".into());
    };
    if let Some(a) = node.attributes.iter().find(|a| !attrs.contains(&a.name.as_str())) {
        return Err(format!("attribute `{}` not supported", a.name));
    }
    if node.op_type == "AveragePool" {
        PoolParams::of(node, None).map_err(|OpError(e)| e)?;
    }
    Ok(())
}

/// Evaluates one node.
pub(super) fn run(node: &Node, inputs: &[Option<&Tensor>], opset: i64) -> OpResult<Vec<Tensor>> {
    let x = || input(inputs, 0);
    let y = || input(inputs, 1);
    let one = match node.op_type.as_str() {
        "Add" => binary(x()?, y()?, |a, b| a.broadcast_add(b))?,
        "Sub" => binary(x()?, y()?, |a, b| a.broadcast_sub(b))?,
        "Mul" => binary(x()?, y()?, |a, b| a.broadcast_mul(b))?,
        "Div" => div(x()?, y()?)?,
        "Pow" => pow(x()?, y()?)?,
        "Neg" => map_num(x()?, |v| -v, |v| v.wrapping_neg())?,
        "Abs" => map_num(x()?, f32::abs, i64::wrapping_abs)?,
        "Sqrt" => float(x()?)?.sqrt()?,
        "Exp" => float(x()?)?.exp()?,
        "Log" => float(x()?)?.log()?,
        "Sin" => float(x()?)?.sin()?,
        "Cos" => float(x()?)?.cos()?,
        "Erf" => float(x()?)?.erf()?,
        "Tanh" => float(x()?)?.tanh()?,
        "Sigmoid" => map_f32(x()?, |v| 1.0 / (1.0 + (-v).exp()))?,
        "Relu" => map_num(x()?, |v| v.max(0.0), |v| v.max(0))?,
        "Round" => map_f32(x()?, f32::round_ties_even)?,
        "Gelu" => gelu(node, x()?)?,
        "Not" => not(x()?)?,
        "Equal" => compare(x()?, y()?, |a, b| a.broadcast_eq(b))?,
        "Less" => compare(x()?, y()?, |a, b| a.broadcast_lt(b))?,
        "LessOrEqual" => compare(x()?, y()?, |a, b| a.broadcast_le(b))?,
        "Greater" => compare(x()?, y()?, |a, b| a.broadcast_gt(b))?,
        "GreaterOrEqual" => compare(x()?, y()?, |a, b| a.broadcast_ge(b))?,
        "Where" => where_(x()?, y()?, input(inputs, 2)?)?,
        "Identity" => x()?.clone(),
        "Cast" => cast(node, x()?)?,
        "ConstantOfShape" => constant_of_shape(node, x()?)?,
        "Shape" => shape(node, x()?)?,
        "Gather" => gather(node, x()?, y()?)?,
        "Unsqueeze" => {
            unsqueeze(x()?, &axes_operand(node, inputs, opset, 13)?.unwrap_or_default())?
        }
        "Squeeze" => squeeze(x()?, axes_operand(node, inputs, opset, 13)?)?,
        "Reshape" => reshape(x()?, &ints(y()?)?, attr_int(node, "allowzero")? == Some(1))?,
        "Expand" => expand(x()?, &ints(y()?)?)?,
        "Concat" => concat(node, inputs)?,
        "Slice" => slice(node, inputs, opset)?,
        "Transpose" => transpose(x()?, attr_ints(node, "perm")?)?,
        "Range" => range(x()?, y()?, input(inputs, 2)?)?,
        "Pad" => pad(node, inputs, opset)?,
        "MatMul" => matmul(x()?, y()?)?,
        "Softmax" => softmax(x()?, attr_int(node, "axis")?, opset)?,
        "ReduceMean" => reduce(node, inputs, opset, 18, Reduction::Mean)?,
        "ReduceSum" => reduce(node, inputs, opset, 13, Reduction::Sum)?,
        "ReduceProd" => reduce(node, inputs, opset, 18, Reduction::Prod)?,
        "Conv" => conv(node, x()?, y()?, opt_input(inputs, 2))?,
        "BatchNormalization" => batch_norm(node, inputs)?,
        "AveragePool" => average_pool(&PoolParams::of(node, Some(x()?.dims()))?, x()?)?,
        "LayerNormalization" => layer_norm(node, inputs)?,
        other => fail!("operator `{other}` not supported"),
    };
    Ok(vec![one])
}

// ---------------------------------------------------------------------------------------------
// Inputs and attributes

/// A required input.
fn input<'a>(inputs: &[Option<&'a Tensor>], ix: usize) -> OpResult<&'a Tensor> {
    match inputs.get(ix) {
        Some(Some(t)) => Ok(t),
        _ => fail!("input {ix} is missing"),
    }
}

/// An optional input (absent or given as an empty name).
fn opt_input<'a>(inputs: &[Option<&'a Tensor>], ix: usize) -> Option<&'a Tensor> {
    inputs.get(ix).copied().flatten()
}

/// The named attribute, checked to be of the given type.
fn attr<'a>(
    node: &'a Node,
    name: &str,
    kind: AttributeType,
) -> OpResult<Option<&'a AttributeProto>> {
    match node.attributes.iter().find(|a| a.name == name) {
        Some(a) if a.r#type == kind as i32 => Ok(Some(a)),
        Some(a) => fail!("attribute `{name}` has type {:?}, expected {kind:?}", a.r#type()),
        None => Ok(None),
    }
}

pub(super) fn attr_int(node: &Node, name: &str) -> OpResult<Option<i64>> {
    Ok(attr(node, name, AttributeType::Int)?.map(|a| a.i))
}

pub(super) fn attr_ints(node: &Node, name: &str) -> OpResult<Option<Vec<i64>>> {
    Ok(attr(node, name, AttributeType::Ints)?.map(|a| a.ints.clone()))
}

fn attr_float(node: &Node, name: &str) -> OpResult<Option<f32>> {
    Ok(attr(node, name, AttributeType::Float)?.map(|a| a.f))
}

fn attr_str(node: &Node, name: &str) -> OpResult<Option<String>> {
    Ok(attr(node, name, AttributeType::String)?.map(|a| String::from_utf8_lossy(&a.s).into_owned()))
}

/// A tensor's values as i64 (shape operands, indices).
fn ints(t: &Tensor) -> OpResult<Vec<i64>> {
    if t.dtype() != DType::I64 {
        fail!("expected an integer tensor, got {:?}", t.dtype());
    }
    Ok(t.flatten_all()?.to_vec1::<i64>()?)
}

/// The one value of a scalar (or one-element) tensor, as f64.
fn scalar(t: &Tensor) -> OpResult<f64> {
    if t.elem_count() != 1 {
        fail!("expected a scalar, got shape {:?}", t.dims());
    }
    Ok(t.flatten_all()?.to_dtype(DType::F64)?.to_vec1::<f64>()?[0])
}

/// Refuses a non-f32 operand of a float-only operator.
fn float(t: &Tensor) -> OpResult<&Tensor> {
    if t.dtype() != DType::F32 {
        fail!("expected a float tensor, got {:?}", t.dtype());
    }
    Ok(t)
}

/// An axis in `[-rank, rank)` made non-negative.
fn axis(axis: i64, rank: usize) -> OpResult<usize> {
    let r = rank as i64;
    if !(-r..r).contains(&axis) {
        fail!("axis {axis} out of range for rank {rank}");
    }
    Ok(if axis < 0 { axis + r } else { axis } as usize)
}

/// The `axes` of Squeeze/Unsqueeze/Reduce*: an attribute before `input_from`, then input 1.
fn axes_operand(
    node: &Node,
    inputs: &[Option<&Tensor>],
    opset: i64,
    input_from: i64,
) -> OpResult<Option<Vec<i64>>> {
    if opset < input_from {
        attr_ints(node, "axes")
    } else {
        opt_input(inputs, 1).map(ints).transpose()
    }
}

fn cpu() -> &'static Device {
    &Device::Cpu
}

// ---------------------------------------------------------------------------------------------
// Elementwise

/// numpy's broadcast of two shapes.
pub(super) fn broadcast_shape(a: &[usize], b: &[usize]) -> OpResult<Vec<usize>> {
    let rank = a.len().max(b.len());
    let dim = |s: &[usize], i: usize| if i + s.len() >= rank { s[i + s.len() - rank] } else { 1 };
    (0..rank)
        .map(|i| match (dim(a, i), dim(b, i)) {
            (x, y) if x == y || y == 1 => Ok(x),
            (1, y) => Ok(y),
            _ => fail!("shapes {a:?} and {b:?} do not broadcast"),
        })
        .collect()
}

/// A same-type binary op through candle's broadcasting kernels.
fn binary(
    a: &Tensor,
    b: &Tensor,
    op: impl Fn(&Tensor, &Tensor) -> candle::Result<Tensor>,
) -> OpResult<Tensor> {
    if a.dtype() != b.dtype() {
        fail!("operand types differ ({:?}, {:?})", a.dtype(), b.dtype());
    }
    broadcast_shape(a.dims(), b.dims())?;
    Ok(op(a, b)?)
}

/// Both operands broadcast to their common shape and flattened.
fn broadcast_values<T: candle::WithDType>(
    a: &Tensor,
    b: &Tensor,
) -> OpResult<(Vec<usize>, Vec<T>, Vec<T>)> {
    let shape = broadcast_shape(a.dims(), b.dims())?;
    let flat = |t: &Tensor| -> OpResult<Vec<T>> {
        Ok(t.broadcast_as(shape.as_slice())?.flatten_all()?.to_vec1::<T>()?)
    };
    Ok((shape.clone(), flat(a)?, flat(b)?))
}

/// Div; integer division truncates (as C and ONNX Runtime do) and refuses a zero divisor.
fn div(a: &Tensor, b: &Tensor) -> OpResult<Tensor> {
    if a.dtype() != DType::I64 {
        return binary(a, b, |a, b| a.broadcast_div(b));
    }
    let (shape, x, y) = broadcast_values::<i64>(a, b)?;
    let q = x.iter().zip(&y).map(|(&x, &y)| x.checked_div(y)).collect::<Option<Vec<_>>>();
    let Some(q) = q else { fail!("integer division by zero") };
    Ok(Tensor::from_vec(q, shape, cpu())?)
}

/// Pow with an f32 base (exponent f32 or integer), as ONNX Runtime computes it: `x·x` for an
/// exponent of 2, `sqrt` for 0.5, `powf` otherwise (candle's `pow` is `exp(y·ln x)`, which is
/// both less exact and NaN for negative bases).
fn pow(a: &Tensor, b: &Tensor) -> OpResult<Tensor> {
    let b = b.to_dtype(DType::F32)?;
    let (shape, x, y) = broadcast_values::<f32>(float(a)?, &b)?;
    let out = x
        .iter()
        .zip(&y)
        .map(|(&x, &y)| match y {
            2.0 => x * x,
            0.5 => x.sqrt(),
            1.0 => x,
            _ => x.powf(y),
        })
        .collect();
    Ok(Tensor::from_vec(out, shape, cpu())?)
}

/// An elementwise f32 function.
fn map_f32(t: &Tensor, f: impl Fn(f32) -> f32) -> OpResult<Tensor> {
    let values: Vec<f32> = float(t)?.flatten_all()?.to_vec1::<f32>()?.into_iter().map(f).collect();
    Ok(Tensor::from_vec(values, t.dims(), cpu())?)
}

/// An elementwise function of f32 or i64 values.
fn map_num(t: &Tensor, f: impl Fn(f32) -> f32, i: impl Fn(i64) -> i64) -> OpResult<Tensor> {
    if t.dtype() == DType::I64 {
        let values: Vec<i64> = t.flatten_all()?.to_vec1::<i64>()?.into_iter().map(i).collect();
        return Ok(Tensor::from_vec(values, t.dims(), cpu())?);
    }
    map_f32(t, f)
}

/// Gelu (opset 20): exact (erf) or, with `approximate="tanh"`, the tanh form.
fn gelu(node: &Node, x: &Tensor) -> OpResult<Tensor> {
    match attr_str(node, "approximate")?.as_deref() {
        None | Some("none") => Ok(float(x)?.gelu_erf()?),
        Some("tanh") => Ok(x.gelu()?),
        Some(other) => fail!("Gelu approximate=`{other}` not supported"),
    }
}

fn not(x: &Tensor) -> OpResult<Tensor> {
    if x.dtype() != DType::U8 {
        fail!("Not of a {:?} tensor", x.dtype());
    }
    let values: Vec<u8> =
        x.flatten_all()?.to_vec1::<u8>()?.into_iter().map(|v| u8::from(v == 0)).collect();
    Ok(Tensor::from_vec(values, x.dims(), cpu())?)
}

/// A comparison, giving a bool (u8) tensor.
fn compare(
    a: &Tensor,
    b: &Tensor,
    op: impl Fn(&Tensor, &Tensor) -> candle::Result<Tensor>,
) -> OpResult<Tensor> {
    binary(a, b, op)
}

fn where_(cond: &Tensor, x: &Tensor, y: &Tensor) -> OpResult<Tensor> {
    if cond.dtype() != DType::U8 || x.dtype() != y.dtype() {
        fail!("Where of {:?} on {:?}/{:?}", cond.dtype(), x.dtype(), y.dtype());
    }
    let shape = broadcast_shape(&broadcast_shape(cond.dims(), x.dims())?, y.dims())?;
    let b = |t: &Tensor| t.broadcast_as(shape.as_slice())?.contiguous();
    Ok(b(cond)?.where_cond(&b(x)?, &b(y)?)?)
}

/// Cast; every integer target is kept as i64 internally, float → int truncates toward zero,
/// anything → bool is `≠ 0`.
fn cast(node: &Node, x: &Tensor) -> OpResult<Tensor> {
    let to = attr_int(node, "to")?.ok_or_else(|| OpError("Cast without `to`".into()))?;
    let dtype = internal_dtype(to as i32)?;
    if dtype == DType::U8 && x.dtype() != DType::U8 {
        let zero = Tensor::zeros((), x.dtype(), cpu())?;
        return Ok(x.broadcast_ne(&zero)?);
    }
    Ok(x.to_dtype(dtype)?)
}

// ---------------------------------------------------------------------------------------------
// Constants and shapes

/// The value of a `Constant` node (folded at load).
pub(super) fn constant(node: &Node, dir: &Path) -> Result<Tensor, String> {
    let err = |OpError(e)| e;
    let candle_err = |e: candle::Error| e.to_string();
    if let Some(a) = attr(node, "value", AttributeType::Tensor).map_err(err)? {
        let t = a.t.as_ref().ok_or("`value` without a tensor")?;
        return tensor_from_proto(t, dir);
    }
    if let Some(v) = attr_float(node, "value_float").map_err(err)? {
        return Tensor::new(v, cpu()).map_err(candle_err);
    }
    if let Some(v) = attr_int(node, "value_int").map_err(err)? {
        return Tensor::new(v, cpu()).map_err(candle_err);
    }
    if let Some(a) = attr(node, "value_floats", AttributeType::Floats).map_err(err)? {
        return Tensor::new(a.floats.as_slice(), cpu()).map_err(candle_err);
    }
    if let Some(v) = attr_ints(node, "value_ints").map_err(err)? {
        return Tensor::new(v.as_slice(), cpu()).map_err(candle_err);
    }
    Err("Constant without a supported value attribute".into())
}

/// A tensor of the given shape filled with a one-element tensor's value.
fn filled(value: &Tensor, dims: &[usize]) -> OpResult<Tensor> {
    let one = value.flatten_all()?.narrow(0, 0, 1)?.reshape(())?;
    Ok(one.broadcast_as(dims)?.contiguous()?)
}

fn constant_of_shape(node: &Node, shape: &Tensor) -> OpResult<Tensor> {
    let dims = to_dims(&ints(shape)?)?;
    let value = match attr(node, "value", AttributeType::Tensor)? {
        Some(a) => {
            let t = a.t.as_ref().ok_or_else(|| OpError("`value` without a tensor".into()))?;
            tensor_from_proto(t, Path::new(""))?
        }
        None => Tensor::new(0f32, cpu())?,
    };
    if value.elem_count() != 1 {
        fail!("ConstantOfShape value has {} elements", value.elem_count());
    }
    filled(&value, &dims)
}

/// Non-negative dims from an i64 shape operand.
fn to_dims(values: &[i64]) -> OpResult<Vec<usize>> {
    values
        .iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| OpError(format!("negative dim {d} in {values:?}")))
        })
        .collect()
}

/// Shape, with opset 15's `start`/`end` (clamped, negatives from the end).
fn shape(node: &Node, x: &Tensor) -> OpResult<Tensor> {
    let rank = x.rank() as i64;
    let clamp = |v: i64| (if v < 0 { v + rank } else { v }).clamp(0, rank) as usize;
    let start = clamp(attr_int(node, "start")?.unwrap_or(0));
    let end = clamp(attr_int(node, "end")?.unwrap_or(rank));
    let dims: Vec<i64> = x.dims()[start..end.max(start)].iter().map(|&d| d as i64).collect();
    Ok(Tensor::new(dims.as_slice(), cpu())?)
}

/// Gather along `axis`; the output shape is `data[..axis] ++ indices ++ data[axis+1..]`.
fn gather(node: &Node, data: &Tensor, indices: &Tensor) -> OpResult<Tensor> {
    let ax = axis(attr_int(node, "axis")?.unwrap_or(0), data.rank())?;
    let n = data.dims()[ax] as i64;
    let idx: Vec<i64> = ints(indices)?
        .into_iter()
        .map(|i| {
            let j = if i < 0 { i + n } else { i };
            if (0..n).contains(&j) { Ok(j) } else { fail!("index {i} out of range for {n}") }
        })
        .collect::<OpResult<_>>()?;
    let count = idx.len();
    let picked = data.index_select(&Tensor::from_vec(idx, count, cpu())?, ax)?;
    let mut dims = data.dims()[..ax].to_vec();
    dims.extend_from_slice(indices.dims());
    dims.extend_from_slice(&data.dims()[ax + 1..]);
    Ok(picked.reshape(dims)?)
}

fn unsqueeze(x: &Tensor, axes: &[i64]) -> OpResult<Tensor> {
    let rank = x.rank() + axes.len();
    let mut inserted: Vec<usize> = axes.iter().map(|&a| axis(a, rank)).collect::<OpResult<_>>()?;
    inserted.sort_unstable();
    let mut dims = x.dims().to_vec();
    for a in inserted {
        dims.insert(a, 1);
    }
    Ok(x.reshape(dims)?)
}

/// Squeeze the given axes (each must be 1) or, without axes, every 1.
fn squeeze(x: &Tensor, axes: Option<Vec<i64>>) -> OpResult<Tensor> {
    let removed: Vec<usize> = match axes {
        Some(axes) => axes.iter().map(|&a| axis(a, x.rank())).collect::<OpResult<_>>()?,
        None => (0..x.rank()).filter(|&i| x.dims()[i] == 1).collect(),
    };
    if let Some(&a) = removed.iter().find(|&&a| x.dims()[a] != 1) {
        fail!("cannot squeeze axis {a} of shape {:?}", x.dims());
    }
    Ok(x.reshape(dims_without(x.dims(), &removed))?)
}

/// `dims` with the entries at `axes` left out (squeezed or reduced without `keepdims`).
fn dims_without(dims: &[usize], axes: &[usize]) -> Vec<usize> {
    dims.iter().enumerate().filter(|(i, _)| !axes.contains(i)).map(|(_, &d)| d).collect()
}

/// Reshape: 0 copies the input's dim (unless `allowzero`), one -1 is inferred.
pub(super) fn reshape(x: &Tensor, shape: &[i64], allow_zero: bool) -> OpResult<Tensor> {
    let mut dims = Vec::with_capacity(shape.len());
    let mut infer = None;
    for (i, &d) in shape.iter().enumerate() {
        dims.push(match d {
            0 if !allow_zero => *x
                .dims()
                .get(i)
                .ok_or_else(|| OpError(format!("shape {shape:?}: no input dim {i} to copy")))?,
            -1 if infer.is_none() => {
                infer = Some(i);
                1
            }
            d if d >= 0 => d as usize,
            _ => fail!("invalid shape {shape:?}"),
        });
    }
    if let Some(i) = infer {
        let known: usize = dims.iter().product();
        if known == 0 || x.elem_count() % known != 0 {
            fail!("cannot reshape {:?} to {shape:?}", x.dims());
        }
        dims[i] = x.elem_count() / known;
    }
    if dims.iter().product::<usize>() != x.elem_count() {
        fail!("cannot reshape {:?} to {shape:?}", x.dims());
    }
    Ok(x.reshape(dims)?)
}

/// Expand: bidirectional broadcast of the input and the shape operand.
fn expand(x: &Tensor, shape: &[i64]) -> OpResult<Tensor> {
    let target = broadcast_shape(x.dims(), &to_dims(shape)?)?;
    Ok(x.broadcast_as(target)?.contiguous()?)
}

fn concat(node: &Node, inputs: &[Option<&Tensor>]) -> OpResult<Tensor> {
    let parts: Vec<&Tensor> = inputs.iter().flatten().copied().collect();
    let first = parts.first().ok_or_else(|| OpError("Concat of nothing".into()))?;
    let ax = axis(
        attr_int(node, "axis")?.ok_or_else(|| OpError("Concat without `axis`".into()))?,
        first.rank(),
    )?;
    // candle refuses empty parts; they contribute nothing.
    let nonempty: Vec<&Tensor> = parts.iter().copied().filter(|t| t.elem_count() > 0).collect();
    if nonempty.is_empty() {
        let mut dims = first.dims().to_vec();
        dims[ax] = parts.iter().map(|t| t.dims().get(ax).copied().unwrap_or(0)).sum();
        return Ok(Tensor::zeros(dims, first.dtype(), cpu())?);
    }
    Ok(Tensor::cat(&nonempty, ax)?)
}

/// Slice (starts/ends/axes as attributes before opset 10, then inputs with optional steps):
/// negative indices count from the end, out-of-range ones clamp, negative steps walk backwards.
fn slice(node: &Node, inputs: &[Option<&Tensor>], opset: i64) -> OpResult<Tensor> {
    let x = input(inputs, 0)?;
    let (starts, ends, axes, steps) = if opset < 10 {
        let need =
            |n: &str| attr_ints(node, n)?.ok_or_else(|| OpError(format!("Slice without `{n}`")));
        (need("starts")?, need("ends")?, attr_ints(node, "axes")?, None)
    } else {
        let operand = |i| opt_input(inputs, i).map(ints).transpose();
        (ints(input(inputs, 1)?)?, ints(input(inputs, 2)?)?, operand(3)?, operand(4)?)
    };
    let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        fail!("Slice operands of different lengths");
    }
    let mut out = x.clone();
    for i in 0..starts.len() {
        let ax = axis(axes[i], x.rank())?;
        let picked = slice_indices(x.dims()[ax], starts[i], ends[i], steps[i])?;
        out = take(&out, ax, picked)?;
    }
    Ok(out)
}

/// The indices one Slice axis keeps, after the spec's clamping.
pub(super) fn slice_indices(dim: usize, start: i64, end: i64, step: i64) -> OpResult<Vec<i64>> {
    if step == 0 {
        fail!("Slice step 0");
    }
    let d = dim as i64;
    let from_end = |v: i64| if v < 0 { v.saturating_add(d) } else { v };
    let (start, end) = if step > 0 {
        (from_end(start).clamp(0, d), from_end(end).clamp(0, d))
    } else {
        (from_end(start).clamp(0, d - 1), from_end(end).clamp(-1, d - 1))
    };
    let mut picked = Vec::new();
    let mut i = start;
    while (step > 0 && i < end) || (step < 0 && i > end) {
        picked.push(i);
        i += step;
    }
    Ok(picked)
}

/// The given positions along one axis (a narrow when they are contiguous and ascending).
fn take(x: &Tensor, ax: usize, picked: Vec<i64>) -> OpResult<Tensor> {
    let n = picked.len();
    let contiguous = picked.windows(2).all(|w| w[1] == w[0] + 1);
    if n == 0 {
        let mut dims = x.dims().to_vec();
        dims[ax] = 0;
        return Ok(Tensor::zeros(dims, x.dtype(), cpu())?);
    }
    if contiguous {
        return Ok(x.narrow(ax, picked[0] as usize, n)?);
    }
    Ok(x.contiguous()?.index_select(&Tensor::from_vec(picked, n, cpu())?, ax)?)
}

fn transpose(x: &Tensor, perm: Option<Vec<i64>>) -> OpResult<Tensor> {
    let perm: Vec<usize> = match perm {
        Some(p) => p.iter().map(|&a| axis(a, x.rank())).collect::<OpResult<_>>()?,
        None => (0..x.rank()).rev().collect(),
    };
    Ok(x.permute(perm)?.contiguous()?)
}

/// Range: `start, start+delta, …` while before `limit`.
fn range(start: &Tensor, limit: &Tensor, delta: &Tensor) -> OpResult<Tensor> {
    let (s, l, d) = (scalar(start)?, scalar(limit)?, scalar(delta)?);
    if d == 0.0 {
        fail!("Range delta 0");
    }
    let n = ((l - s) / d).ceil().max(0.0) as usize;
    match start.dtype() {
        DType::I64 => {
            let (s, d) = (s as i64, d as i64);
            Ok(Tensor::from_vec((0..n as i64).map(|i| s + i * d).collect::<Vec<_>>(), n, cpu())?)
        }
        DType::F32 => {
            let (s, d) = (s as f32, d as f32);
            Ok(Tensor::from_vec((0..n).map(|i| s + i as f32 * d).collect::<Vec<_>>(), n, cpu())?)
        }
        other => fail!("Range of {other:?}"),
    }
}

/// Pad, constant mode: pads `[begin…, end…]` (attribute before opset 11, then input 1 with an
/// optional constant value and, from 18, axes); negative pads crop.
fn pad(node: &Node, inputs: &[Option<&Tensor>], opset: i64) -> OpResult<Tensor> {
    let x = input(inputs, 0)?;
    let mode = attr_str(node, "mode")?.unwrap_or_else(|| "constant".into());
    if mode != "constant" {
        fail!("Pad mode `{mode}` not supported");
    }
    let (pads, value) = if opset < 11 {
        let pads = attr_ints(node, "pads")?.ok_or_else(|| OpError("Pad without `pads`".into()))?;
        (pads, f64::from(attr_float(node, "value")?.unwrap_or(0.0)))
    } else {
        let value = opt_input(inputs, 2).map(scalar).transpose()?.unwrap_or(0.0);
        (ints(input(inputs, 1)?)?, value)
    };
    let axes: Vec<usize> = match opt_input(inputs, 3) {
        Some(a) => ints(a)?.iter().map(|&a| axis(a, x.rank())).collect::<OpResult<_>>()?,
        None => (0..x.rank()).collect(),
    };
    if pads.len() != 2 * axes.len() {
        fail!("{} pads for {} axes", pads.len(), axes.len());
    }
    let fill = Tensor::new(value, cpu())?.to_dtype(x.dtype())?;
    let mut out = x.clone();
    for (i, &ax) in axes.iter().enumerate() {
        out = pad_axis(&out, ax, pads[i], pads[i + axes.len()], &fill)?;
    }
    Ok(out)
}

/// Pads (or, negative, crops) one axis at both ends with `fill`.
fn pad_axis(x: &Tensor, ax: usize, begin: i64, end: i64, fill: &Tensor) -> OpResult<Tensor> {
    let dim = x.dims()[ax] as i64;
    let (crop_b, crop_e) = ((-begin).max(0), (-end).max(0));
    if crop_b + crop_e > dim {
        fail!("pads crop more than the axis holds");
    }
    let mut out = x.narrow(ax, crop_b as usize, (dim - crop_b - crop_e) as usize)?;
    let block = |n: i64, like: &Tensor| -> OpResult<Tensor> {
        let mut dims = like.dims().to_vec();
        dims[ax] = n as usize;
        filled(fill, &dims)
    };
    if begin > 0 || end > 0 {
        let mut parts = Vec::new();
        if begin > 0 {
            parts.push(block(begin, &out)?);
        }
        parts.push(out.clone());
        if end > 0 {
            parts.push(block(end, &out)?);
        }
        let parts: Vec<&Tensor> = parts.iter().filter(|t| t.elem_count() > 0).collect();
        out = if parts.is_empty() { out } else { Tensor::cat(&parts, ax)? };
    }
    Ok(out)
}

/// MatMul with numpy semantics (1-D operands get a unit dim that is removed again).
fn matmul(a: &Tensor, b: &Tensor) -> OpResult<Tensor> {
    let (a1, b1) = (a.rank() == 1, b.rank() == 1);
    let a = if a1 { a.unsqueeze(0)? } else { a.contiguous()? };
    let b = if b1 { b.unsqueeze(1)? } else { b.contiguous()? };
    let mut out = float(&a)?.broadcast_matmul(float(&b)?)?;
    if b1 {
        out = out.squeeze(D::Minus1)?;
    }
    if a1 {
        out = out.squeeze(D::Minus(if b1 { 1 } else { 2 }))?;
    }
    Ok(out)
}

/// Softmax. From opset 13 along `axis` (default -1); before, the input is coerced to 2-D
/// `(∏dims[..axis], ∏dims[axis..])` (default axis 1) and normalised over the second dim.
pub(super) fn softmax(x: &Tensor, axis_attr: Option<i64>, opset: i64) -> OpResult<Tensor> {
    let x = float(x)?;
    if opset >= 13 {
        let ax = axis(axis_attr.unwrap_or(-1), x.rank())?;
        return softmax_along(x, ax);
    }
    let ax = if x.rank() == 0 { 0 } else { axis(axis_attr.unwrap_or(1), x.rank())? };
    let rows: usize = x.dims()[..ax].iter().product();
    let flat = x.reshape((rows, x.elem_count() / rows.max(1)))?;
    Ok(softmax_along(&flat, 1)?.reshape(x.dims())?)
}

fn softmax_along(x: &Tensor, ax: usize) -> OpResult<Tensor> {
    let shifted = x.broadcast_sub(&x.max_keepdim(ax)?)?.exp()?;
    Ok(shifted.broadcast_div(&shifted.sum_keepdim(ax)?)?)
}

#[derive(Clone, Copy)]
enum Reduction {
    Mean,
    Sum,
    Prod,
}

/// ReduceMean/Sum/Prod: axes as an attribute before `axes_input_from`, then input 1; no axes
/// means all (or nothing with `noop_with_empty_axes`); `keepdims` defaults to 1.
fn reduce(
    node: &Node,
    inputs: &[Option<&Tensor>],
    opset: i64,
    axes_input_from: i64,
    how: Reduction,
) -> OpResult<Tensor> {
    let x = input(inputs, 0)?;
    let axes = axes_operand(node, inputs, opset, axes_input_from)?.unwrap_or_default();
    if axes.is_empty() && attr_int(node, "noop_with_empty_axes")? == Some(1) {
        return Ok(x.clone());
    }
    let mut axes: Vec<usize> = if axes.is_empty() {
        (0..x.rank()).collect()
    } else {
        axes.iter().map(|&a| axis(a, x.rank())).collect::<OpResult<_>>()?
    };
    axes.sort_unstable();
    axes.dedup();
    let reduced = match how {
        Reduction::Sum => x.sum_keepdim(axes.clone())?,
        Reduction::Mean => {
            let count: usize = axes.iter().map(|&a| x.dims()[a]).product();
            let n = Tensor::new(count as f32, cpu())?;
            float(x)?.sum_keepdim(axes.clone())?.broadcast_div(&n)?
        }
        Reduction::Prod => reduce_prod(x, &axes)?,
    };
    if attr_int(node, "keepdims")? == Some(0) {
        return Ok(reduced.reshape(dims_without(reduced.dims(), &axes))?);
    }
    Ok(reduced)
}

/// Product over the given axes, keeping them as 1 (candle has no product reduction).
fn reduce_prod(x: &Tensor, axes: &[usize]) -> OpResult<Tensor> {
    let mut out = x.clone();
    for &ax in axes {
        let n = out.dims()[ax];
        let mut acc = filled(&Tensor::new(1i64, cpu())?.to_dtype(x.dtype())?, &{
            let mut d = out.dims().to_vec();
            d[ax] = 1;
            d
        })?;
        for i in 0..n {
            acc = acc.mul(&out.narrow(ax, i, 1)?)?;
        }
        out = acc;
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Convolution, normalisation, pooling

/// Spatial geometry of a Conv or pool, in a 2-D form (1-D ops have height 1).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Window {
    pub kernel: [usize; 2],
    pub strides: [usize; 2],
    pub dilations: [usize; 2],
    /// `[top, left, bottom, right]`.
    pub pads: [usize; 4],
}

impl Window {
    /// Reads `kernel_shape`, `strides`, `dilations`, `pads` and `auto_pad` for 1 or 2 spatial
    /// dims of extent `input` (needed only for the SAME auto pads).
    fn of(node: &Node, kernel: &[i64], input: Option<&[usize]>) -> OpResult<Self> {
        let rank = kernel.len();
        if !(1..=2).contains(&rank) {
            fail!("{rank}-D windows not supported");
        }
        let list = |name: &str, default: i64, len: usize| -> OpResult<Vec<usize>> {
            let v = attr_ints(node, name)?.unwrap_or_else(|| vec![default; len]);
            if v.len() != len || v.iter().any(|&x| x < 0) {
                fail!("`{name}` {v:?} does not fit a {rank}-D window");
            }
            Ok(v.iter().map(|&x| x as usize).collect())
        };
        let kernel: Vec<usize> = kernel.iter().map(|&k| k.max(1) as usize).collect();
        let strides = list("strides", 1, rank)?;
        let dilations = list("dilations", 1, rank)?;
        if strides.contains(&0) || dilations.contains(&0) {
            fail!("zero stride or dilation");
        }
        let mut pads = list("pads", 0, 2 * rank)?;
        match attr_str(node, "auto_pad")?.as_deref() {
            None | Some("NOTSET") => {}
            Some("VALID") => pads = vec![0; 2 * rank],
            Some(same @ ("SAME_UPPER" | "SAME_LOWER")) => {
                let Some(input) = input else {
                    return Ok(Self::pad_later(&kernel, &strides, &dilations));
                };
                for i in 0..rank {
                    let out = input[i].div_ceil(strides[i]);
                    let span = (kernel[i] - 1) * dilations[i] + 1;
                    let total = ((out - 1) * strides[i] + span).saturating_sub(input[i]);
                    let (small, big) = (total / 2, total - total / 2);
                    (pads[i], pads[i + rank]) =
                        if same == "SAME_UPPER" { (small, big) } else { (big, small) };
                }
            }
            Some(other) => fail!("auto_pad `{other}` not supported"),
        }
        let two = |v: &[usize], fill: usize| if rank == 1 { [fill, v[0]] } else { [v[0], v[1]] };
        let pads4 =
            if rank == 1 { [0, pads[0], 0, pads[1]] } else { [pads[0], pads[1], pads[2], pads[3]] };
        Ok(Self {
            kernel: two(&kernel, 1),
            strides: two(&strides, 1),
            dilations: two(&dilations, 1),
            pads: pads4,
        })
    }

    /// Placeholder for SAME pads before the input size is known (load-time checks).
    fn pad_later(kernel: &[usize], strides: &[usize], dilations: &[usize]) -> Self {
        let two = |v: &[usize]| if v.len() == 1 { [1, v[0]] } else { [v[0], v[1]] };
        Self { kernel: two(kernel), strides: two(strides), dilations: two(dilations), pads: [0; 4] }
    }

    /// Output extent of one axis (0 = height, 1 = width) with floor or ceil rounding.
    fn out_len(&self, axis: usize, input: usize, ceil: bool) -> OpResult<usize> {
        let span = ((self.kernel[axis] - 1) * self.dilations[axis] + 1) as i64;
        let padded = (input + self.pads[axis] + self.pads[axis + 2]) as i64;
        let s = self.strides[axis] as i64;
        // Ceil mode admits one window that runs past the end, even of an input shorter than
        // the window (CAM++ pools a take shorter than its 100-frame segments as one window).
        let out = if ceil {
            (padded - span).div_euclid(s) + i64::from((padded - span) % s != 0)
        } else {
            (padded - span).div_euclid(s)
        } + 1;
        if out <= 0 {
            fail!("window {span} is larger than the padded input {padded}");
        }
        // A ceil-mode window may not start in the end padding (ONNX, PyTorch, ONNX Runtime).
        let begin_limit = (input + self.pads[axis]) as i64;
        Ok(if ceil && (out - 1) * s >= begin_limit { out - 1 } else { out } as usize)
    }
}

/// A tensor's data in the 2-D form `(N, C, H, W)`, 1-D inputs getting `H = 1`.
fn spatial_2d(x: &Tensor, rank: usize) -> OpResult<(Vec<f32>, [usize; 4])> {
    let dims = x.dims();
    let shape = match (rank, dims.len()) {
        (1, 3) => [dims[0], dims[1], 1, dims[2]],
        (2, 4) => [dims[0], dims[1], dims[2], dims[3]],
        _ => fail!("input of shape {dims:?} for a {rank}-D window"),
    };
    Ok((float(x)?.flatten_all()?.to_vec1::<f32>()?, shape))
}

/// Back from the 2-D form to the op's rank.
fn from_2d(values: Vec<f32>, [n, c, h, w]: [usize; 4], rank: usize) -> OpResult<Tensor> {
    Ok(if rank == 1 {
        Tensor::from_vec(values, (n, c, w), cpu())?
    } else {
        Tensor::from_vec(values, (n, c, h, w), cpu())?
    })
}

/// Conv (1-D or 2-D): im2col + one matmul per batch and group; a group with one input channel
/// (depthwise) runs a direct loop instead, as an im2col per channel would cost far more than
/// the arithmetic.
fn conv(node: &Node, x: &Tensor, w: &Tensor, bias: Option<&Tensor>) -> OpResult<Tensor> {
    let rank = w.rank().checked_sub(2).ok_or_else(|| OpError("weight of rank < 3".into()))?;
    let kernel = attr_ints(node, "kernel_shape")?
        .unwrap_or_else(|| w.dims()[2..].iter().map(|&d| d as i64).collect());
    let input_extent = x.dims().get(2..).map(|d| d.to_vec());
    let win = Window::of(node, &kernel, input_extent.as_deref())?;
    let (data, [n, c, h, wd]) = spatial_2d(x, rank)?;
    let groups = attr_int(node, "group")?.unwrap_or(1).max(1) as usize;
    let m = w.dims()[0];
    let cg = w.dims()[1];
    if c != cg * groups
        || m % groups != 0
        || w.dims()[2..] != *kernel.iter().map(|&k| k as usize).collect::<Vec<_>>()
    {
        fail!("input {:?}, weight {:?}, group {groups} do not fit", x.dims(), w.dims());
    }
    let (ho, wo) = (win.out_len(0, h, false)?, win.out_len(1, wd, false)?);
    let weights = float(w)?.flatten_all()?.to_vec1::<f32>()?;
    let bias = match bias {
        Some(b) => float(b)?.flatten_all()?.to_vec1::<f32>()?,
        None => vec![0.0; m],
    };
    let geometry = ConvGeometry { h, w: wd, ho, wo, win: &win };
    // A 1×1 kernel without stride or padding: the image already is its column matrix.
    let pointwise = win.kernel == [1, 1] && win.strides == [1, 1] && win.pads == [0; 4];
    let mut out = Vec::with_capacity(n * m * ho * wo);
    for b in 0..n {
        let image = &data[b * c * h * wd..(b + 1) * c * h * wd];
        if cg == 1 {
            out.extend(depthwise(image, &weights, &bias, m / groups, &geometry));
            continue;
        }
        let mg = m / groups;
        let k = cg * win.kernel[0] * win.kernel[1];
        for g in 0..groups {
            let group_image = &image[g * cg * h * wd..(g + 1) * cg * h * wd];
            let cols = if pointwise {
                Tensor::from_slice(group_image, (k, ho * wo), cpu())?
            } else {
                Tensor::from_vec(im2col(group_image, cg, &geometry), (k, ho * wo), cpu())?
            };
            let wg = Tensor::from_slice(&weights[g * mg * k..(g + 1) * mg * k], (mg, k), cpu())?;
            let y = wg.matmul(&cols)?.flatten_all()?.to_vec1::<f32>()?;
            for (oc, row) in y.chunks(ho * wo).enumerate() {
                let b = bias[g * mg + oc];
                out.extend(row.iter().map(|v| v + b));
            }
        }
    }
    from_2d(out, [n, m, ho, wo], rank)
}

/// Input and output extents of one convolution in the 2-D form.
struct ConvGeometry<'a> {
    h: usize,
    w: usize,
    ho: usize,
    wo: usize,
    win: &'a Window,
}

impl ConvGeometry<'_> {
    /// Input row and column read by output `(oy, ox)` at kernel tap `(ky, kx)`, if not padding.
    fn source(&self, oy: usize, ox: usize, ky: usize, kx: usize) -> Option<(usize, usize)> {
        let win = self.win;
        let y = (oy * win.strides[0] + ky * win.dilations[0]).checked_sub(win.pads[0])?;
        let x = (ox * win.strides[1] + kx * win.dilations[1]).checked_sub(win.pads[1])?;
        (y < self.h && x < self.w).then_some((y, x))
    }
}

/// Outputs `o` in `lo..hi` whose tap reads inside the input: `0 ≤ o·stride + offset − pad <
/// input`, for `o < out`.
fn valid_outputs(
    out: usize,
    stride: usize,
    offset: usize,
    pad: usize,
    input: usize,
) -> (usize, usize) {
    let lo = pad.saturating_sub(offset).div_ceil(stride);
    let hi = (input + pad).checked_sub(offset).map_or(0, |n| n.div_ceil(stride)).min(out);
    (lo.min(hi), hi)
}

/// For kernel tap `(ky, kx)`, each output row that reads a real input row, as `(first output
/// index, first input index, count)`: the tap's valid outputs of that row are contiguous, the
/// inputs they read are `stride` apart.
fn tap_rows(g: &ConvGeometry, ky: usize, kx: usize) -> impl Iterator<Item = (usize, usize, usize)> {
    let win = g.win;
    let (ylo, yhi) = valid_outputs(g.ho, win.strides[0], ky * win.dilations[0], win.pads[0], g.h);
    let (lo, hi) = valid_outputs(g.wo, win.strides[1], kx * win.dilations[1], win.pads[1], g.w);
    let x = lo * win.strides[1] + kx * win.dilations[1];
    let rows = if lo < hi { ylo..yhi } else { 0..0 };
    rows.map(move |oy| {
        let y = oy * win.strides[0] + ky * win.dilations[0] - win.pads[0];
        (oy * g.wo + lo, y * g.w + x - win.pads[1], hi - lo)
    })
}

/// Columns `(channels·kh·kw, ho·wo)` of one image (zeros where the window reads padding); rows
/// are copied slice-wise.
fn im2col(image: &[f32], channels: usize, g: &ConvGeometry) -> Vec<f32> {
    let [kh, kw] = g.win.kernel;
    let sw = g.win.strides[1];
    let plane_len = g.ho * g.wo;
    let mut cols = vec![0.0f32; channels * kh * kw * plane_len];
    for (row, col) in cols.chunks_mut(plane_len).enumerate() {
        let (ch, ky, kx) = (row / (kh * kw), row / kw % kh, row % kw);
        let plane = &image[ch * g.h * g.w..(ch + 1) * g.h * g.w];
        for (o, i, n) in tap_rows(g, ky, kx) {
            let dst = &mut col[o..o + n];
            if sw == 1 {
                dst.copy_from_slice(&plane[i..i + n]);
            } else {
                dst.iter_mut().zip(plane[i..].iter().step_by(sw)).for_each(|(d, s)| *d = *s);
            }
        }
    }
    cols
}

/// Grouped convolution with one input channel per group: output channel `oc` reads input
/// channel `oc / per_group`. Accumulates one kernel tap at a time over whole output rows.
fn depthwise(
    image: &[f32],
    weights: &[f32],
    bias: &[f32],
    per_group: usize,
    g: &ConvGeometry,
) -> Vec<f32> {
    let [kh, kw] = g.win.kernel;
    let sw = g.win.strides[1];
    let mut out = vec![0.0f32; bias.len() * g.ho * g.wo];
    for (oc, plane_out) in out.chunks_mut(g.ho * g.wo).enumerate() {
        let ic = oc / per_group;
        let plane = &image[ic * g.h * g.w..(ic + 1) * g.h * g.w];
        for ky in 0..kh {
            for kx in 0..kw {
                let tap = weights[(oc * kh + ky) * kw + kx];
                for (o, i, n) in tap_rows(g, ky, kx) {
                    let dst = &mut plane_out[o..o + n];
                    if sw == 1 {
                        dst.iter_mut().zip(&plane[i..i + n]).for_each(|(d, s)| *d += s * tap);
                    } else {
                        let src = plane[i..].iter().step_by(sw);
                        dst.iter_mut().zip(src).for_each(|(d, s)| *d += s * tap);
                    }
                }
            }
        }
        plane_out.iter_mut().for_each(|v| *v += bias[oc]);
    }
    out
}

/// BatchNormalization in inference mode: `(x − mean) / sqrt(var + ε) · scale + bias` per
/// channel (axis 1), in that order.
fn batch_norm(node: &Node, inputs: &[Option<&Tensor>]) -> OpResult<Tensor> {
    if attr_int(node, "training_mode")? == Some(1) {
        fail!("training mode not supported");
    }
    if attr_int(node, "spatial")? == Some(0) {
        fail!("spatial=0 not supported");
    }
    let x = float(input(inputs, 0)?)?;
    let eps = attr_float(node, "epsilon")?.unwrap_or(1e-5);
    let param = |i| -> OpResult<Vec<f32>> {
        Ok(float(input(inputs, i)?)?.flatten_all()?.to_vec1::<f32>()?)
    };
    let (scale, bias, mean, var) = (param(1)?, param(2)?, param(3)?, param(4)?);
    let c = *x.dims().get(1).ok_or_else(|| OpError("input of rank < 2".into()))?;
    if [&scale, &bias, &mean, &var].iter().any(|p| p.len() != c) {
        fail!("parameters do not have {c} channels");
    }
    let inner: usize = x.dims()[2..].iter().product();
    let std: Vec<f32> = var.iter().map(|v| (v + eps).sqrt()).collect();
    let mut values = x.flatten_all()?.to_vec1::<f32>()?;
    for (i, chunk) in values.chunks_mut(inner.max(1)).enumerate() {
        let ch = i % c;
        for v in chunk {
            *v = (*v - mean[ch]) / std[ch] * scale[ch] + bias[ch];
        }
    }
    Ok(Tensor::from_vec(values, x.dims(), cpu())?)
}

/// LayerNormalization (opset 17) over the axes from `axis` on; only the first output.
fn layer_norm(node: &Node, inputs: &[Option<&Tensor>]) -> OpResult<Tensor> {
    let x = float(input(inputs, 0)?)?;
    let from = axis(attr_int(node, "axis")?.unwrap_or(-1), x.rank())?;
    let eps = attr_float(node, "epsilon")?.unwrap_or(1e-5);
    let axes: Vec<usize> = (from..x.rank()).collect();
    let count = Tensor::new(axes.iter().map(|&a| x.dims()[a]).product::<usize>() as f32, cpu())?;
    let centred = x.broadcast_sub(&x.sum_keepdim(axes.clone())?.broadcast_div(&count)?)?;
    let var = centred.sqr()?.sum_keepdim(axes)?.broadcast_div(&count)?;
    let eps = Tensor::new(eps, cpu())?;
    let mut y = centred
        .broadcast_div(&var.broadcast_add(&eps)?.sqrt()?)?
        .broadcast_mul(input(inputs, 1)?)?;
    if let Some(bias) = opt_input(inputs, 2) {
        y = y.broadcast_add(bias)?;
    }
    Ok(y)
}

/// An AveragePool's window and rounding, checked at load.
#[derive(Debug)]
pub(super) struct PoolParams {
    pub window: Window,
    pub ceil: bool,
    pub count_include_pad: bool,
    pub rank: usize,
}

impl PoolParams {
    /// Reads the attributes; the input's dims (known at run time, not at load) check the rank
    /// and resolve SAME auto pads.
    ///
    /// Refuses `ceil_mode=1, count_include_pad=1` unless `kernel ≥ stride` and there is no end
    /// padding: only then can no ceil-mode window start in the end padding, the one case where
    /// ONNX Runtime's divisor has no settled definition.
    pub fn of(node: &Node, input: Option<&[usize]>) -> OpResult<Self> {
        let kernel = attr_ints(node, "kernel_shape")?
            .ok_or_else(|| OpError("AveragePool without `kernel_shape`".into()))?;
        let rank = kernel.len();
        if let Some(dims) = input
            && dims.len() != rank + 2
        {
            fail!("input of shape {dims:?} for a {rank}-D pool");
        }
        let ceil = attr_int(node, "ceil_mode")? == Some(1);
        let count_include_pad = attr_int(node, "count_include_pad")? == Some(1);
        let window = Window::of(node, &kernel, input.map(|d| &d[2..]))?;
        if window.dilations != [1, 1] {
            fail!("dilated pooling not supported");
        }
        let auto_pad = attr_str(node, "auto_pad")?;
        let plain = matches!(auto_pad.as_deref(), None | Some("NOTSET"))
            && window.pads[2..] == [0, 0]
            && (0..2).all(|a| window.kernel[a] >= window.strides[a]);
        if ceil && count_include_pad && !plain {
            fail!(
                "AveragePool `{}` (ceil_mode=1, count_include_pad=1, kernel {kernel:?}, strides \
                 {:?}, pads {:?}, auto_pad {auto_pad:?}) has no exact ONNX Runtime equivalent here",
                node.name,
                attr_ints(node, "strides")?,
                attr_ints(node, "pads")?
            );
        }
        Ok(Self { window, ceil, count_include_pad, rank })
    }
}

/// AveragePool as ONNX Runtime computes it.
///
/// Why not the ONNX reference: CAM++'s context pooling is `avg_pool1d(kernel 100, stride 100,
/// ceil_mode=True)`, exported as 52 `AveragePool(ceil_mode=1, count_include_pad=1)` nodes. With
/// `count_include_pad=1` ONNX Runtime divides **every** window by the kernel size, including a
/// ceil-mode window that runs past the end of the input; PyTorch (and the ONNX reference, and
/// tract) divide that partial window by the frames it covers. Upstream's embedding is ORT's,
/// and the two differ by ~2 % unless ⌈Tk/2⌉ is a multiple of 100 (fixtures/voice-prompt, trap
/// 1). With `count_include_pad=0` every runtime divides by the real elements covered.
pub(super) fn average_pool(p: &PoolParams, x: &Tensor) -> OpResult<Tensor> {
    let (data, [n, c, h, w]) = spatial_2d(x, p.rank)?;
    let win = &p.window;
    let (ho, wo) = (win.out_len(0, h, p.ceil)?, win.out_len(1, w, p.ceil)?);
    let kernel_size = (win.kernel[0] * win.kernel[1]) as f32;
    let g = ConvGeometry { h, w, ho, wo, win };
    let mut out = Vec::with_capacity(n * c * ho * wo);
    for plane in data.chunks(h * w) {
        for oy in 0..ho {
            for ox in 0..wo {
                let (mut sum, mut count) = (0.0f32, 0usize);
                for ky in 0..win.kernel[0] {
                    for kx in 0..win.kernel[1] {
                        if let Some((y, x)) = g.source(oy, ox, ky, kx) {
                            sum += plane[y * w + x];
                            count += 1;
                        }
                    }
                }
                let divisor = if p.count_include_pad { kernel_size } else { count.max(1) as f32 };
                out.push(sum / divisor);
            }
        }
    }
    from_2d(out, [n, c, ho, wo], p.rank)
}

#[cfg(test)]
mod tests {
    use super::super::node::test_node;
    use super::*;

    fn int(name: &str, i: i64) -> AttributeProto {
        AttributeProto {
            name: name.into(),
            r#type: AttributeType::Int as i32,
            i,
            ..Default::default()
        }
    }

    fn ints_attr(name: &str, v: &[i64]) -> AttributeProto {
        AttributeProto {
            name: name.into(),
            r#type: AttributeType::Ints as i32,
            ints: v.to_vec(),
            ..Default::default()
        }
    }

    fn f32_tensor(values: &[f32], dims: &[usize]) -> Tensor {
        Tensor::from_slice(values, dims, cpu()).unwrap()
    }

    fn i64_tensor(values: &[i64]) -> Tensor {
        Tensor::new(values, cpu()).unwrap()
    }

    /// Runs one node on the given inputs at the given opset.
    fn eval(
        op: &str,
        attrs: Vec<AttributeProto>,
        inputs: &[&Tensor],
        opset: i64,
    ) -> OpResult<Tensor> {
        let node = test_node(op, attrs);
        check_supported(&node).map_err(OpError)?;
        let inputs: Vec<Option<&Tensor>> = inputs.iter().map(|t| Some(*t)).collect();
        Ok(run(&node, &inputs, opset)?.remove(0))
    }

    fn values(t: &Tensor) -> Vec<f32> {
        t.flatten_all().unwrap().to_vec1::<f32>().unwrap()
    }

    fn close(a: &[f32], b: &[f32]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6)
    }

    #[test]
    fn round_is_half_to_even() {
        let x = f32_tensor(&[0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6], &[8]);
        let y = eval("Round", vec![], &[&x], 14).unwrap();
        assert_eq!(values(&y), [0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 2.0, 3.0]);
    }

    #[test]
    fn reshape_copies_zero_and_infers_minus_one() {
        let x = Tensor::zeros((2, 3, 4), DType::F32, cpu()).unwrap();
        assert_eq!(reshape(&x, &[0, -1], false).unwrap().dims(), [2, 12]);
        assert_eq!(reshape(&x, &[-1, 0, 2], false).unwrap().dims(), [4, 3, 2]);
        assert!(reshape(&x, &[-1, -1], false).is_err());
        assert!(reshape(&x, &[5, -1], false).is_err());
        // allowzero: a 0 is a real zero-sized dim, which 24 elements cannot fill.
        assert!(reshape(&x, &[0, 24], true).is_err());
    }

    #[test]
    fn binary_ops_broadcast_like_numpy() {
        let a = f32_tensor(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 1, 3]);
        let b = f32_tensor(&[10.0, 20.0], &[2, 1]);
        let sum = eval("Add", vec![], &[&a, &b], 14).unwrap();
        assert_eq!(sum.dims(), [2, 2, 3]);
        assert_eq!(values(&sum)[..6], [11.0, 12.0, 13.0, 21.0, 22.0, 23.0]);
        let bad = f32_tensor(&[1.0, 2.0], &[2]);
        assert!(eval("Mul", vec![], &[&a, &bad], 14).is_err());
        assert_eq!(broadcast_shape(&[3, 1, 5], &[4, 1]).unwrap(), [3, 4, 5]);
    }

    #[test]
    fn pow_squares_negative_bases() {
        let x = f32_tensor(&[-3.0, 0.5], &[2]);
        let two = f32_tensor(&[2.0], &[]);
        assert_eq!(values(&eval("Pow", vec![], &[&x, &two], 14).unwrap()), [9.0, 0.25]);
    }

    #[test]
    fn slice_clamps_and_walks_backwards() {
        assert_eq!(slice_indices(5, -3, 100, 1).unwrap(), [2, 3, 4]);
        assert_eq!(slice_indices(5, -1, i64::MIN, -1).unwrap(), [4, 3, 2, 1, 0]);
        assert_eq!(slice_indices(5, 10, 0, -2).unwrap(), [4, 2]);
        assert_eq!(slice_indices(5, 3, 1, 1).unwrap(), Vec::<i64>::new());
        assert!(slice_indices(5, 0, 5, 0).is_err());
        let x = f32_tensor(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3]);
        let (starts, ends, axes, steps) =
            (i64_tensor(&[-1]), i64_tensor(&[-100]), i64_tensor(&[-1]), i64_tensor(&[-2]));
        let y = eval("Slice", vec![], &[&x, &starts, &ends, &axes, &steps], 14).unwrap();
        assert_eq!(y.dims(), [2, 2]);
        assert_eq!(values(&y), [2.0, 0.0, 5.0, 3.0]);
    }

    fn pool_attrs(kernel: i64, stride: i64, include_pad: i64) -> Vec<AttributeProto> {
        vec![
            int("ceil_mode", 1),
            int("count_include_pad", include_pad),
            ints_attr("kernel_shape", &[kernel]),
            ints_attr("pads", &[0, 0]),
            ints_attr("strides", &[stride]),
        ]
    }

    /// ONNX Runtime divides the partial last ceil-mode window by the kernel size when padding
    /// counts, by the real count when it does not; whole windows agree.
    #[test]
    fn average_pool_follows_onnx_runtime() {
        let x = f32_tensor(&[1.0, 2.0, 3.0, 4.0, 5.0], &[1, 1, 5]);
        let ort = eval("AveragePool", pool_attrs(2, 2, 1), &[&x], 11).unwrap();
        assert_eq!(ort.dims(), [1, 1, 3]);
        assert_eq!(values(&ort), [1.5, 3.5, 2.5]);
        let real_count = eval("AveragePool", pool_attrs(2, 2, 0), &[&x], 11).unwrap();
        assert_eq!(values(&real_count), [1.5, 3.5, 5.0]);
        // Shorter than the kernel: one window, still divided by the kernel size.
        let short = f32_tensor(&[1.0, 2.0, 3.0], &[1, 1, 3]);
        let one = eval("AveragePool", pool_attrs(4, 4, 1), &[&short], 11).unwrap();
        assert_eq!(values(&one), [1.5]);
        let floor = vec![int("count_include_pad", 1), ints_attr("kernel_shape", &[4])];
        assert!(eval("AveragePool", floor, &[&short], 11).is_err());
        let whole = f32_tensor(&[1.0, 2.0, 3.0, 4.0], &[1, 1, 4]);
        for include_pad in [0, 1] {
            let y = eval("AveragePool", pool_attrs(2, 2, include_pad), &[&whole], 11).unwrap();
            assert_eq!(values(&y), [1.5, 3.5]);
        }
    }

    #[test]
    fn inexact_pools_are_refused() {
        let node = test_node("AveragePool", pool_attrs(2, 3, 1));
        let err = check_supported(&node).unwrap_err();
        assert!(err.contains("`test_AveragePool`") && err.contains("no exact"), "{err}");
        // count_include_pad=0 has no discrepancy and is accepted.
        check_supported(&test_node("AveragePool", pool_attrs(2, 3, 0))).unwrap();
    }

    /// Before opset 13 Softmax normalises over the input coerced to 2-D at `axis`.
    #[test]
    fn softmax_before_opset_13_coerces_to_2d() {
        let x = f32_tensor(&[0.0, 0.0, 0.0, 0.0], &[2, 2]);
        let old = softmax(&x, Some(0), 11).unwrap();
        assert!(close(&values(&old), &[0.25; 4]), "{:?}", values(&old));
        let new = softmax(&x, Some(0), 13).unwrap();
        assert!(close(&values(&new), &[0.5; 4]), "{:?}", values(&new));
        let x = f32_tensor(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], &[2, 2, 2]);
        let rows = softmax(&x, None, 11).unwrap();
        let row_sums: Vec<f32> = values(&rows).chunks(4).map(|r| r.iter().sum()).collect();
        assert!(close(&row_sums, &[1.0, 1.0]), "{row_sums:?}");
    }

    /// Conv 1-D with asymmetric pads, stride and dilation against a direct sum, for the
    /// im2col path (groups of 2 channels) and the depthwise path (groups of 1).
    #[test]
    fn conv_matches_a_direct_sum() {
        let (len, k, stride, dil, pads) = (9usize, 3usize, 2usize, 2usize, [1usize, 2]);
        let x: Vec<f32> = (0..4 * len).map(|i| ((i * 7) % 11) as f32 - 5.0).collect();
        for groups in [2usize, 4] {
            let cg = 4 / groups;
            let w: Vec<f32> = (0..4 * cg * k).map(|i| ((i * 5) % 7) as f32 * 0.25 - 0.5).collect();
            let bias = [0.5f32, -1.0, 0.25, 2.0];
            let attrs = vec![
                int("group", groups as i64),
                ints_attr("pads", &[pads[0] as i64, pads[1] as i64]),
                ints_attr("strides", &[stride as i64]),
                ints_attr("dilations", &[dil as i64]),
            ];
            let inputs = [
                f32_tensor(&x, &[1, 4, len]),
                f32_tensor(&w, &[4, cg, k]),
                f32_tensor(&bias, &[4]),
            ];
            let y = eval("Conv", attrs, &[&inputs[0], &inputs[1], &inputs[2]], 11).unwrap();
            let out_len = (len + pads[0] + pads[1] - dil * (k - 1) - 1) / stride + 1;
            assert_eq!(y.dims(), [1, 4, out_len]);
            let mut expected = Vec::new();
            for oc in 0..4 {
                let g = oc / (4 / groups);
                for o in 0..out_len {
                    let mut acc = bias[oc];
                    for ic in 0..cg {
                        for t in 0..k {
                            let pos = (o * stride + t * dil) as i64 - pads[0] as i64;
                            if (0..len as i64).contains(&pos) {
                                acc += x[(g * cg + ic) * len + pos as usize]
                                    * w[(oc * cg + ic) * k + t];
                            }
                        }
                    }
                    expected.push(acc);
                }
            }
            assert!(
                close(&values(&y), &expected),
                "groups {groups}: {:?} vs {expected:?}",
                values(&y)
            );
        }
    }

    /// SAME auto pads put the odd pad at the end (UPPER) or the start (LOWER).
    #[test]
    fn conv_same_auto_pad() {
        let x = f32_tensor(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[1, 1, 6]);
        let w = f32_tensor(&[1.0, 1.0, 1.0], &[1, 1, 3]);
        let same = |mode: &str| {
            let attrs = vec![
                AttributeProto {
                    name: "auto_pad".into(),
                    r#type: AttributeType::String as i32,
                    s: mode.as_bytes().to_vec(),
                    ..Default::default()
                },
                ints_attr("strides", &[2]),
            ];
            values(&eval("Conv", attrs, &[&x, &w], 11).unwrap())
        };
        assert_eq!(same("SAME_UPPER"), [6.0, 12.0, 11.0]);
        assert_eq!(same("SAME_LOWER"), [3.0, 9.0, 15.0]);
    }

    #[test]
    fn gather_takes_negative_indices_and_keeps_index_shape() {
        let data = f32_tensor(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[3, 2]);
        let idx = Tensor::new(&[[-1i64, 0]], cpu()).unwrap();
        let y = eval("Gather", vec![], &[&data, &idx], 11).unwrap();
        assert_eq!(y.dims(), [1, 2, 2]);
        assert_eq!(values(&y), [4.0, 5.0, 0.0, 1.0]);
        let scalar = Tensor::new(1i64, cpu()).unwrap();
        let col = eval("Gather", vec![int("axis", 1)], &[&data, &scalar], 11).unwrap();
        assert_eq!(col.dims(), [3]);
        assert_eq!(values(&col), [1.0, 3.0, 5.0]);
    }

    /// Unsqueeze's axes are an attribute before opset 13 and an input from 13.
    #[test]
    fn unsqueeze_axes_follow_the_opset() {
        let x = Tensor::zeros((2, 3), DType::F32, cpu()).unwrap();
        let y = eval("Unsqueeze", vec![ints_attr("axes", &[0, -1])], &[&x], 11).unwrap();
        assert_eq!(y.dims(), [1, 2, 3, 1]);
        let axes = i64_tensor(&[1]);
        let y = eval("Unsqueeze", vec![], &[&x, &axes], 13).unwrap();
        assert_eq!(y.dims(), [2, 1, 3]);
    }

    #[test]
    fn reduce_prod_and_keepdims() {
        let x = i64_tensor(&[2, 3, 4]);
        let y = eval("ReduceProd", vec![int("keepdims", 0)], &[&x], 11).unwrap();
        assert_eq!(y.dims(), [] as [usize; 0]);
        assert_eq!(y.to_vec0::<i64>().unwrap(), 24);
        let m = f32_tensor(&[1.0, 2.0, 3.0, 5.0], &[2, 2]);
        let mean = eval("ReduceMean", vec![ints_attr("axes", &[-1])], &[&m], 11).unwrap();
        assert_eq!(mean.dims(), [2, 1]);
        assert_eq!(values(&mean), [1.5, 4.0]);
    }

    #[test]
    fn unknown_attribute_is_refused() {
        let node = test_node("Conv", vec![int("fancy", 1)]);
        assert!(check_supported(&node).unwrap_err().contains("`fancy`"));
        assert!(check_supported(&test_node("GridSample", vec![])).is_err());
    }
}
