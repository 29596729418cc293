// Index-driven operators. Gather (embedding lookup): output dims taken from the indices
// map to their own loops and the gathered axis of `data` maps to -1; cutting a loop of
// the other data dims splits the table. Scatter* and NonZero are `routing`: their index
// operands map to no loop, so the sharding must keep them whole.
// FLOPs 0 (ScatterND/ScatterElements with a reduction: one per update element).
// Bytes of lookups: indices read + gathered elements read + output written (a lookup reads
// only the rows it gathers, not the whole table).
#include <stdexcept>

#include "compiler/ops/op_families.h"
#include "compiler/ops/op_helpers.h"

namespace symtensor::compiler {
namespace {

using namespace ops;

GiNaC::ex lookup_bytes(const OpContext& ctx) {
  const GiNaC::ex out = tensor_bytes(*ctx.outputs.at(0));
  return tensor_bytes(input(ctx, 1)) + 2 * out;
}

// ---- Gather ----
std::vector<OutputInfo> gather_infer(const OpContext& ctx) {
  const Shape& data = input_shape(ctx, 0);
  const Shape& indices = input_shape(ctx, 1);
  const int axis = normalize_axis(ctx.node.attr_int("axis", 0), data.size());
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  std::optional<Values> value;
  auto dv = input(ctx, 0).value;
  auto iv = input(ctx, 1).value;
  if (dv && iv && data.size() == 1) {
    value = Values{};
    for (const auto& e : *iv) {
      auto i = as_int(e);
      const auto n = static_cast<std::int64_t>(dv->size());
      if (!i || *i < -n || *i >= n) { value.reset(); break; }
      value->push_back((*dv)[*i < 0 ? *i + n : *i]);
    }
  }
  return {output(input(ctx, 0).dtype, out, value)};
}

IterationSpace gather_space(const OpContext& ctx) {
  const std::size_t r = input_shape(ctx, 0).size(), q = input_shape(ctx, 1).size();
  const int axis = normalize_axis(ctx.node.attr_int("axis", 0), r);
  std::vector<int> data(r), indices = identity_dims(q, axis);
  for (std::size_t d = 0; d < r; ++d) {
    int di = static_cast<int>(d);
    data[d] = di < axis ? di : (di == axis ? -1 : di + static_cast<int>(q) - 1);
  }
  IterationSpace s = movement_space(ctx, {data, indices});
  s.bytes = lookup_bytes(ctx);
  return s;
}

// ---- GatherElements: output has the indices' shape ----
IterationSpace gather_elements_space(const OpContext& ctx) {
  const std::size_t r = input_shape(ctx, 0).size();
  const int axis = normalize_axis(ctx.node.attr_int("axis", 0), r);
  std::vector<int> data = identity_dims(r);
  data[axis] = -1;
  IterationSpace s = movement_space(ctx, {data, identity_dims(r)});
  s.bytes = lookup_bytes(ctx);
  return s;
}

// ---- GatherND: out = indices[:-1] + data[batch_dims + k:] ----
std::int64_t gather_nd_k(const OpContext& ctx) {
  const Shape& indices = input_shape(ctx, 1);
  auto k = indices.empty() ? std::nullopt : as_int(indices.back());
  if (!k) throw std::runtime_error("GatherND indices must have a known last dim");
  return *k;
}

std::vector<OutputInfo> gather_nd_infer(const OpContext& ctx) {
  const Shape& data = input_shape(ctx, 0);
  const Shape& indices = input_shape(ctx, 1);
  const std::size_t b = ctx.node.attr_int("batch_dims", 0), k = gather_nd_k(ctx);
  if (b + k > data.size()) throw std::runtime_error("GatherND indices address more dims than data has");
  Shape out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.begin() + b + k, data.end());
  return {output(input(ctx, 0).dtype, out)};
}

IterationSpace gather_nd_space(const OpContext& ctx) {
  const std::size_t r = input_shape(ctx, 0).size(), q = input_shape(ctx, 1).size();
  const std::size_t b = ctx.node.attr_int("batch_dims", 0), k = gather_nd_k(ctx);
  std::vector<int> data(r, -1), indices = identity_dims(q);
  indices.back() = -1;
  for (std::size_t d = 0; d < r; ++d) {
    if (d < b) data[d] = static_cast<int>(d);
    else if (d >= b + k) data[d] = static_cast<int>(q - 1 + d - b - k);
  }
  IterationSpace s = movement_space(ctx, {data, indices});
  s.bytes = lookup_bytes(ctx);
  return s;
}

// ---- Scatter*: output = data with updates routed in ----
std::vector<OutputInfo> same_as_data(const OpContext& ctx) { return {output(input(ctx, 0).dtype, input_shape(ctx, 0))}; }

IterationSpace scatter_space(const OpContext& ctx) {
  IterationSpace s = movement_space(ctx, {identity_dims(input_shape(ctx, 0).size())});
  s.kind = OpKind::routing;
  if (ctx.node.attr_string("reduction", "none") != "none") s.flops = product(input_shape(ctx, 2));
  return s;
}

// ---- OneHot: depth inserted at `axis`; unknown depth is a fresh symbol ----
int one_hot_axis(const OpContext& ctx) {
  return normalize_axis(ctx.node.attr_int("axis", -1), input_shape(ctx, 0).size() + 1);
}

std::vector<OutputInfo> one_hot_infer(const OpContext& ctx) {
  Shape out = input_shape(ctx, 0);
  auto depth = input_value(ctx, 1);
  GiNaC::ex d = depth && depth->size() == 1 ? (*depth)[0] : GiNaC::ex(ctx.symbols.fresh());
  if (GiNaC::is_a<GiNaC::numeric>(d)) d = static_cast<long>(GiNaC::ex_to<GiNaC::numeric>(d).to_double());  // depth may be a float
  out.insert(out.begin() + one_hot_axis(ctx), d);
  return {output(input(ctx, 2).dtype, out)};
}

IterationSpace one_hot_space(const OpContext& ctx) {
  const int axis = one_hot_axis(ctx);
  std::vector<int> indices;
  for (std::size_t d = 0; d < input_shape(ctx, 0).size(); ++d) {
    indices.push_back(static_cast<int>(d) < axis ? static_cast<int>(d) : static_cast<int>(d) + 1);
  }
  IterationSpace s = movement_space(ctx, {indices});
  s.kind = OpKind::routing;
  return s;
}

// ---- NonZero: [rank, data-dependent count] ----
std::vector<OutputInfo> non_zero_infer(const OpContext& ctx) {
  const auto rank = static_cast<long>(input_shape(ctx, 0).size());
  GiNaC::ex count = ctx.symbols.fresh();
  if (has_output(ctx, 0) && ctx.outputs[0]->shape_known && ctx.outputs[0]->shape.size() == 2) {
    count = ctx.outputs[0]->shape[1];  // keep the symbol given on a previous run
  }
  return {output(ElementType::i64, {GiNaC::ex(rank), count})};
}

IterationSpace non_zero_space(const OpContext& ctx) {
  IterationSpace s = movement_space(ctx, {});
  s.kind = OpKind::routing;
  s.loops.clear();
  s.output_dims = {{-1, -1}};
  return s;
}

}  // namespace

void register_gather_scatter_ops(OpRegistry& r) {
  r.add("", "Gather", {gather_infer, gather_space});
  r.add("", "GatherElements", {[](const OpContext& ctx) {
                                 return std::vector<OutputInfo>{output(input(ctx, 0).dtype, input_shape(ctx, 1))};
                               },
                               gather_elements_space});
  r.add("", "GatherND", {gather_nd_infer, gather_nd_space});
  for (const char* op : {"ScatterND", "ScatterElements", "Scatter"}) r.add("", op, {same_as_data, scatter_space});
  r.add("", "OneHot", {one_hot_infer, one_hot_space});
  r.add("", "NonZero", {non_zero_infer, non_zero_space});
}

}  // namespace symtensor::compiler
