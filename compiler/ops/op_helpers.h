#pragma once
// Helpers shared by the op families: operand access, axes, numpy broadcasting, integer
// lists from an attribute or a compile-time input, and iteration-space building blocks.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ops/op_semantics.h"

namespace symtensor::compiler::ops {

inline OpRule rule(std::function<std::vector<OutputInfo>(const OpContext&)> infer,
                   std::function<IterationSpace(const OpContext&)> space) {
  return OpRule{std::move(infer), std::move(space)};
}

using Values = std::vector<GiNaC::ex>;

// --- expressions -------------------------------------------------------------------
std::optional<std::int64_t> as_int(const GiNaC::ex& e);  // an integer literal, or nullopt
bool is_one(const GiNaC::ex& e);                           // the literal 1
bool same_extent(const GiNaC::ex& a, const GiNaC::ex& b);  // equal after normalization
GiNaC::ex product(const Shape& shape, std::size_t begin = 0, std::size_t end = SIZE_MAX);
GiNaC::ex simplify(const GiNaC::ex& e);  // normal form used for every inferred extent

// --- operands ----------------------------------------------------------------------
bool has_input(const OpContext& ctx, std::size_t i);
const Tensor& input(const OpContext& ctx, std::size_t i);  // throws when absent
const Shape& input_shape(const OpContext& ctx, std::size_t i);  // throws when unknown
std::size_t num_outputs(const OpContext& ctx);
// Output i's shape (filled once inference ran); throws when unknown.
const Shape& output_shape(const OpContext& ctx, std::size_t i);
bool has_output(const OpContext& ctx, std::size_t i);

// Axis in [-rank, rank) to [0, rank); throws naming `what` when out of range.
int normalize_axis(std::int64_t axis, std::size_t rank, const char* what = "axis");
std::vector<int> normalize_axes(const std::vector<std::int64_t>& axes, std::size_t rank);

// The compile-time value of input i (nullopt if absent or unknown).
std::optional<Values> input_value(const OpContext& ctx, std::size_t i);
// Integer list from attribute `attr` when the node has it (older opsets), else from input
// `input_index` (newer opsets); nullopt when neither is given. Throws when the input is
// present but its value is not known at compile time (or not integers, if `integers`).
std::optional<std::vector<std::int64_t>> ints_from_attr_or_input(const OpContext& ctx,
                                                                 const std::string& attr,
                                                                 std::size_t input_index);
// Same, but elements may be symbolic (Reshape/Expand targets, Slice bounds).
std::optional<Values> values_from_attr_or_input(const OpContext& ctx, const std::string& attr,
                                                std::size_t input_index);

// --- broadcasting ------------------------------------------------------------------
// numpy broadcasting of any number of shapes; throws on two different numeric extents.
Shape broadcast_shapes(const std::vector<Shape>& shapes);
// For each dim of `operand`, the index of the broadcast `result` dim it maps to, or -1 when
// it is a stretched size-1 dim.
std::vector<int> broadcast_dim_map(const Shape& operand, const Shape& result);
// Element-wise values of rank <= 1 operands (length-1 operands broadcast), or nullopt.
std::optional<Values> broadcast_values(const std::vector<std::optional<Values>>& operands,
                                       const std::function<GiNaC::ex(const Values&)>& f);

// --- reshape dim groups ------------------------------------------------------------
// For each input dim, the output dim of the group it belongs to (the outermost output dim)
// when it is the outermost non-1 input dim of its group, else -1. Groups are maximal runs
// whose products match ([b,s,h] -> [b*s,h]: b->0, s->-1, h->1).
std::vector<int> reshape_dim_map(const Shape& in, const Shape& out);

// --- iteration spaces ----------------------------------------------------------------
GiNaC::ex tensor_bytes(const Tensor& t);  // elements x element size
// Bytes read from all present inputs plus bytes written to all present outputs.
GiNaC::ex io_bytes(const OpContext& ctx);
int add_loop(IterationSpace& space, std::string name, GiNaC::ex extent, bool reduction = false);
// The loop named prefix + index ("d0", "k1", ...).
int add_indexed_loop(IterationSpace& space, const char* prefix, std::size_t index, GiNaC::ex extent,
                     bool reduction = false);
// Loops d0..dn over output 0's dims; every input maps by broadcasting, every output of
// the same rank as output 0 maps identically. FLOPs = flops_per_element x outputs[0] size.
IterationSpace pointwise_space(const OpContext& ctx, OpKind kind, GiNaC::ex flops_per_element);
// Data movement: loops over output 0's dims, output 0 maps identically, inputs as given
// (absent or empty entries become [-1 ...] of the input's rank); 0 FLOPs.
IterationSpace movement_space(const OpContext& ctx, std::vector<std::vector<int>> input_dims);
// Identity map of a shape onto loops [first, first + rank).
std::vector<int> identity_dims(std::size_t rank, int first = 0);

// --- Einsum (matmul_ops.cc): every letter a loop, letters absent from the output reductions;
// for operators that are einsums with costs of their own (routing_ops.cc) ---------------
std::vector<OutputInfo> einsum_infer(const OpContext& ctx);
IterationSpace einsum_space(const OpContext& ctx);

// --- sliding windows (Conv, ConvTranspose, pools) -------------------------------------
// floor(a / b) and ceil(a / b) of an integer extent: exact for numbers, floor_div (below)
// over symbolic extents (a / b where b divides them). Slice and Range steps, Split's parts.
GiNaC::ex div_floor(const GiNaC::ex& a, std::int64_t b);
GiNaC::ex div_ceil(const GiNaC::ex& a, std::int64_t b);
// floor(a / b) for a positive integer b, kept symbolic while a is: a GiNaC function that
// evaluates once a is a number (bound dims), is a / b when b divides every coefficient of
// a, and moves whole multiples of b out of a's constant term (floor_div(h - 1, 2) + 1 ==
// floor_div(h + 1, 2)), so equal extents stay equal expressions. What a window's output
// extent over a symbolic dim is (window_output_extent); ceil(a / b) is floor_div(a + b - 1, b).
DECLARE_FUNCTION_2P(floor_div)
struct WindowAttrs {
  std::vector<std::int64_t> kernel, strides, dilations, pads;  // pads: begins then ends
  std::string auto_pad = "NOTSET";
  bool ceil_mode = false;
};
// kernel_shape/strides/dilations/pads/auto_pad/ceil_mode of a node with `spatial` dims;
// `kernel` is used when the node has no kernel_shape attribute.
WindowAttrs window_attrs(const OpContext& ctx, std::size_t spatial, std::vector<std::int64_t> kernel);
// Output extent of spatial dim `i` for input extent `in` (ONNX Conv/pool formulas; symbolic
// extents are assumed to divide evenly by the stride).
GiNaC::ex window_output_extent(const GiNaC::ex& in, std::size_t i, const WindowAttrs& w);

// --- shape-function results ----------------------------------------------------------
OutputInfo output(ElementType dtype, Shape shape, std::optional<Values> value = std::nullopt);
// A value only worth keeping for small tensors (shape sub-graphs).
inline constexpr std::size_t kMaxValueElements = 64;

}  // namespace symtensor::compiler::ops
