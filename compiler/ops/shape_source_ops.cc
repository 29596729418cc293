// Operators that create shapes or values (Shape, Size, Constant, ConstantOfShape, Range) or
// enlarge a tensor to a target (Expand, Tile, Pad). 0 FLOPs; Pad, Tile and Expand map an
// input dim to its output loop only when that dim is unchanged.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <variant>

#include "compiler/ops/op_families.h"
#include "compiler/ops/op_helpers.h"

namespace symtensor::compiler {
namespace {

using namespace ops;

// Produced values: no loops, nothing read, output written. Shape and Size read their
// input's metadata only, so it has no operand entry: no layout is asked of it (a cut tensor
// is not gathered to be measured).
IterationSpace source_space(const OpContext& ctx) {
  IterationSpace s;
  s.kind = OpKind::data_movement;
  if (!reads_dims_only(ctx.node))
    for (const Tensor* t : ctx.inputs) s.input_dims.emplace_back(t ? t->shape.size() : 0, -1);
  for (const Tensor* t : ctx.outputs) {
    s.output_dims.emplace_back(t ? t->shape.size() : 0, -1);
    if (t) s.bytes += tensor_bytes(*t);
  }
  return s;
}

std::optional<Values> small_value_or_none(Values v) {
  if (v.size() > kMaxValueElements) return std::nullopt;
  return v;
}

Shape target_shape(const OpContext& ctx, std::size_t input_index, const char* op) {
  auto v = values_from_attr_or_input(ctx, "", input_index);
  if (!v) throw std::runtime_error(std::string(op) + " has no target shape");
  return *v;
}

// ---- Expand / Tile / Pad ----
std::vector<OutputInfo> expand_infer(const OpContext& ctx) {
  Shape out = broadcast_shapes({input_shape(ctx, 0), target_shape(ctx, 1, "Expand")});
  std::optional<Values> value;
  if (auto v = input(ctx, 0).value; v && v->size() == 1 && out.size() <= 1) {
    const std::int64_t count = out.empty() ? 1 : as_int(out[0]).value_or(-1);
    if (count >= 0 && count <= static_cast<std::int64_t>(kMaxValueElements)) value = Values(count, (*v)[0]);
  }
  return {output(input(ctx, 0).dtype, out, value)};
}

IterationSpace expand_space(const OpContext& ctx) {
  return movement_space(ctx, {broadcast_dim_map(input_shape(ctx, 0), output_shape(ctx, 0))});
}

std::vector<OutputInfo> tile_infer(const OpContext& ctx) {
  Shape out = input_shape(ctx, 0);
  Shape repeats = target_shape(ctx, 1, "Tile");
  if (repeats.size() != out.size()) throw std::runtime_error("Tile repeats do not match the input rank");
  for (std::size_t d = 0; d < out.size(); ++d) out[d] = simplify(out[d] * repeats[d]);
  return {output(input(ctx, 0).dtype, out)};
}

IterationSpace tile_space(const OpContext& ctx) {
  Shape repeats = target_shape(ctx, 1, "Tile");
  std::vector<int> in;
  for (std::size_t d = 0; d < repeats.size(); ++d) in.push_back(is_one(repeats[d]) ? static_cast<int>(d) : -1);
  return movement_space(ctx, {in});
}

// pads attribute (opset < 11) or input 1; opset 18's axes input 3 names the padded dims.
Shape pad_amounts(const OpContext& ctx, std::size_t rank) {
  auto pads = values_from_attr_or_input(ctx, "pads", 1);
  if (!pads) throw std::runtime_error("Pad has no pads");
  auto axes = ints_from_attr_or_input(ctx, "", 3);
  std::vector<int> dims = axes ? normalize_axes(*axes, rank) : identity_dims(rank);
  if (pads->size() != 2 * dims.size()) throw std::runtime_error("Pad pads length does not match the padded dims");
  Shape full(2 * rank, GiNaC::ex(0));
  for (std::size_t i = 0; i < dims.size(); ++i) {
    full[dims[i]] = (*pads)[i];
    full[dims[i] + rank] = (*pads)[i + dims.size()];
  }
  return full;
}

std::vector<OutputInfo> pad_infer(const OpContext& ctx) {
  Shape out = input_shape(ctx, 0);
  Shape pads = pad_amounts(ctx, out.size());
  for (std::size_t d = 0; d < out.size(); ++d) out[d] = simplify(out[d] + pads[d] + pads[d + out.size()]);
  return {output(input(ctx, 0).dtype, out)};
}

IterationSpace pad_space(const OpContext& ctx) {
  const std::size_t rank = input_shape(ctx, 0).size();
  Shape pads = pad_amounts(ctx, rank);
  std::vector<int> in;
  for (std::size_t d = 0; d < rank; ++d) in.push_back(pads[d].is_zero() && pads[d + rank].is_zero() ? static_cast<int>(d) : -1);
  return movement_space(ctx, {in});
}

// ---- Shape / Size: values from the input's symbolic shape ----
std::vector<OutputInfo> shape_infer(const OpContext& ctx) {
  const Shape& x = input_shape(ctx, 0);
  const auto rank = static_cast<std::int64_t>(x.size());
  std::int64_t start = ctx.node.attr_int("start", 0), end = ctx.node.attr_int("end", rank);  // opset 15
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<std::int64_t>(start, 0, rank);
  end = std::clamp<std::int64_t>(end, start, rank);
  Values v(x.begin() + start, x.begin() + end);
  return {output(ElementType::i64, {GiNaC::ex(static_cast<long>(v.size()))}, v)};
}

std::vector<OutputInfo> size_infer(const OpContext& ctx) {
  return {output(ElementType::i64, {}, Values{simplify(product(input_shape(ctx, 0)))})};
}

// ---- ConstantOfShape: shape from the input's value. The fill value is 0 without a `value`
// attribute; a `value` tensor the importer did not convert (stored as a string) leaves the
// output's elements unknown rather than guessed.
std::optional<GiNaC::ex> fill_value(const OpContext& ctx) {
  const AttributeValue* a = ctx.node.attribute("value");
  if (!a) return GiNaC::ex(0);
  if (auto i = std::get_if<std::int64_t>(a)) return GiNaC::ex(static_cast<long>(*i));
  // -inf (a causal mask's fill) has no exact value: the elements stay unknown, the shape not.
  if (auto d = std::get_if<double>(a)) return std::isfinite(*d) ? std::optional(GiNaC::ex(GiNaC::numeric(*d))) : std::nullopt;
  if (auto is = std::get_if<std::vector<std::int64_t>>(a); is && is->size() == 1) return GiNaC::ex(static_cast<long>((*is)[0]));
  if (auto ds = std::get_if<std::vector<double>>(a); ds && ds->size() == 1 && std::isfinite((*ds)[0]))
    return GiNaC::ex(GiNaC::numeric((*ds)[0]));
  return std::nullopt;
}

std::vector<OutputInfo> constant_of_shape_infer(const OpContext& ctx) {
  Shape out = target_shape(ctx, 0, "ConstantOfShape");
  ElementType dtype = has_output(ctx, 0) && ctx.outputs[0]->dtype != ElementType::undefined ? ctx.outputs[0]->dtype
                                                                                          : ElementType::f32;
  std::optional<Values> value;
  std::int64_t count = out.empty() ? 1 : -1;
  if (out.size() == 1) count = as_int(out[0]).value_or(-1);
  auto fill = fill_value(ctx);
  if (fill && count >= 0 && count <= static_cast<std::int64_t>(kMaxValueElements)) value = Values(count, *fill);
  return {output(dtype, out, value)};
}

IterationSpace written_space(const OpContext& ctx) { return movement_space(ctx, {}); }

// ---- Range: length max(ceil((limit - start) / delta), 0); unknown bounds give a fresh symbol ----
std::vector<OutputInfo> range_infer(const OpContext& ctx) {
  auto start = input_value(ctx, 0), limit = input_value(ctx, 1), delta = input_value(ctx, 2);
  const ElementType dtype = input(ctx, 0).dtype;
  if (!start || !limit || !delta || start->size() != 1 || limit->size() != 1 || delta->size() != 1) {
    return {output(dtype, {ctx.symbols.fresh()})};
  }
  GiNaC::ex s = (*start)[0], l = (*limit)[0], d = (*delta)[0];
  GiNaC::ex n;
  if (GiNaC::is_a<GiNaC::numeric>(s) && GiNaC::is_a<GiNaC::numeric>(l) && GiNaC::is_a<GiNaC::numeric>(d)) {
    if (d.is_zero()) throw std::runtime_error("Range delta is 0");
    double len = std::ceil(GiNaC::ex_to<GiNaC::numeric>((l - s) / d).to_double());
    n = static_cast<long>(std::max(len, 0.0));
  } else if (auto di = as_int(d)) {
    n = div_ceil(simplify(l - s), *di);
  } else {
    n = simplify((l - s) / d);
  }
  std::optional<Values> value;
  if (auto count = as_int(n); count && *count <= static_cast<std::int64_t>(kMaxValueElements)) {
    value = Values{};
    for (std::int64_t k = 0; k < *count; ++k) value->push_back(s + d * static_cast<long>(k));
  }
  return {output(dtype, {n}, value)};
}

// ---- Constant: value_int(s)/value_float(s) here; a `value` tensor is read by the importer ----
std::vector<OutputInfo> constant_infer(const OpContext& ctx) {
  const Node& n = ctx.node;
  if (auto* a = n.attribute("value_int"); a && std::holds_alternative<std::int64_t>(*a)) {
    return {output(ElementType::i64, {}, Values{GiNaC::ex(static_cast<long>(std::get<std::int64_t>(*a)))})};
  }
  if (auto ints = n.attr_ints("value_ints")) {
    Values v;
    for (auto i : *ints) v.push_back(static_cast<long>(i));
    return {output(ElementType::i64, {GiNaC::ex(static_cast<long>(v.size()))}, small_value_or_none(v))};
  }
  if (auto* a = n.attribute("value_float"); a && std::holds_alternative<double>(*a)) {
    return {output(ElementType::f32, {}, Values{GiNaC::numeric(std::get<double>(*a))})};
  }
  if (auto* a = n.attribute("value_floats"); a && std::holds_alternative<std::vector<double>>(*a)) {
    const auto& fs = std::get<std::vector<double>>(*a);
    Values v;
    for (double f : fs) v.push_back(GiNaC::numeric(f));
    return {output(ElementType::f32, {GiNaC::ex(static_cast<long>(v.size()))}, small_value_or_none(v))};
  }
  if (has_output(ctx, 0) && ctx.outputs[0]->shape_known) {
    const Tensor& t = *ctx.outputs[0];
    return {output(t.dtype, t.shape, t.value)};
  }
  throw std::runtime_error("Constant tensor value must be read by the importer");
}

}  // namespace

void register_shape_source_ops(OpRegistry& r) {
  r.add("", "Expand", rule(expand_infer, expand_space));
  r.add("", "Tile", rule(tile_infer, tile_space));
  r.add("", "Pad", rule(pad_infer, pad_space));
  r.add("", "Shape", rule(shape_infer, source_space));
  r.add("", "Size", rule(size_infer, source_space));
  r.add("", "ConstantOfShape", rule(constant_of_shape_infer, written_space));
  r.add("", "Range", rule(range_infer, written_space));
  r.add("", "Constant", rule(constant_infer, source_space));
}

}  // namespace symtensor::compiler
