// Reductions. Loops are the input dims; reduced dims are `reduction` loops. A reduced dim
// kept with keepdims=1 is a size-1 output dim that maps to -1.
// FLOPs per input element: ReduceSum/Mean/Max/Min/Prod/LogSum 1, ReduceL1/L2/SumSquare 2,
// ReduceLogSumExp 3, ArgMax/ArgMin 1, TopK 1 (comparisons), CumSum 1.
#include <stdexcept>

#include "compiler/ops/op_families.h"
#include "compiler/ops/op_helpers.h"

namespace symtensor::compiler {
namespace {

using namespace ops;

// Reduced dims: `axes` attribute (ReduceSum before opset 13, the others before 18) or the
// second input; none means all dims unless noop_with_empty_axes.
std::vector<bool> reduced_dims(const OpContext& ctx, std::size_t rank) {
  auto axes = ints_from_attr_or_input(ctx, "axes", 1);
  std::vector<bool> reduced(rank, false);
  if (!axes || axes->empty()) {
    if (ctx.node.attr_int("noop_with_empty_axes", 0) == 0) reduced.assign(rank, true);
    return reduced;
  }
  for (int a : normalize_axes(*axes, rank)) reduced[a] = true;
  return reduced;
}

std::vector<bool> single_axis(const OpContext& ctx, std::size_t rank, std::int64_t fallback) {
  std::vector<bool> reduced(rank, false);
  if (rank > 0) reduced[normalize_axis(ctx.node.attr_int("axis", fallback), rank)] = true;
  return reduced;
}

Shape reduced_shape(const Shape& x, const std::vector<bool>& reduced, bool keepdims) {
  Shape out;
  for (std::size_t d = 0; d < x.size(); ++d) {
    if (!reduced[d]) out.push_back(x[d]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

IterationSpace reduction_space(const OpContext& ctx, const std::vector<bool>& reduced, bool keepdims, long flops) {
  const Shape& x = input_shape(ctx, 0);
  IterationSpace s;
  s.kind = OpKind::reduction;
  std::vector<int> out;
  for (std::size_t d = 0; d < x.size(); ++d) {
    int l = add_indexed_loop(s, "d", d, x[d], reduced[d]);
    if (!reduced[d]) out.push_back(l);
    else if (keepdims) out.push_back(-1);
  }
  s.input_dims.push_back(identity_dims(x.size()));
  for (std::size_t i = 1; i < ctx.inputs.size(); ++i) {
    s.input_dims.emplace_back(has_input(ctx, i) ? input(ctx, i).shape.size() : 0, -1);
  }
  for (std::size_t o = 0; o < ctx.outputs.size(); ++o) s.output_dims.push_back(out);
  s.flops = flops * product(x);
  s.bytes = io_bytes(ctx);
  return s;
}

// Reduce* over a fully known rank-1 value (ReduceProd(Shape(x)) in exported graphs).
std::optional<Values> reduce_value(const OpContext& ctx, const std::string& op, const std::vector<bool>& reduced) {
  auto v = input_value(ctx, 0);
  if (!v || input(ctx, 0).shape.size() != 1 || !reduced[0]) return std::nullopt;
  GiNaC::ex acc = op == "ReduceProd" ? 1 : 0;
  if (op == "ReduceSum" || op == "ReduceProd") {
    for (const auto& e : *v) acc = op == "ReduceSum" ? acc + e : acc * e;
    return Values{simplify(acc)};
  }
  return std::nullopt;
}

OpRule reduce_rule(const std::string& op, long flops) {
  OpRule rule;
  rule.infer = [op](const OpContext& ctx) {
    const Shape& x = input_shape(ctx, 0);
    auto reduced = reduced_dims(ctx, x.size());
    const bool keep = ctx.node.attr_int("keepdims", 1) != 0;
    return std::vector<OutputInfo>{output(input(ctx, 0).dtype, reduced_shape(x, reduced, keep), reduce_value(ctx, op, reduced))};
  };
  rule.iteration_space = [flops](const OpContext& ctx) {
    auto reduced = reduced_dims(ctx, input_shape(ctx, 0).size());
    return reduction_space(ctx, reduced, ctx.node.attr_int("keepdims", 1) != 0, flops);
  };
  return rule;
}

OpRule arg_rule() {
  OpRule rule;
  rule.infer = [](const OpContext& ctx) {
    const Shape& x = input_shape(ctx, 0);
    const bool keep = ctx.node.attr_int("keepdims", 1) != 0;
    return std::vector<OutputInfo>{output(ElementType::i64, reduced_shape(x, single_axis(ctx, x.size(), 0), keep))};
  };
  rule.iteration_space = [](const OpContext& ctx) {
    const std::size_t rank = input_shape(ctx, 0).size();
    return reduction_space(ctx, single_axis(ctx, rank, 0), ctx.node.attr_int("keepdims", 1) != 0, 1);
  };
  return rule;
}

// TopK: k from the attribute (opset < 10) or the second input; unknown k is a fresh symbol.
GiNaC::ex topk_k(const OpContext& ctx) {
  if (ctx.node.attribute("k")) return static_cast<long>(ctx.node.attr_int("k", 0));
  auto v = input_value(ctx, 1);
  if (v && v->size() == 1) return (*v)[0];
  if (has_output(ctx, 0) && ctx.outputs[0]->shape_known && input(ctx, 0).shape.size() == ctx.outputs[0]->shape.size()) {
    const Shape& x = input(ctx, 0).shape;
    return ctx.outputs[0]->shape[normalize_axis(ctx.node.attr_int("axis", -1), x.size())];
  }
  return ctx.symbols.fresh();
}

OpRule topk_rule() {
  OpRule rule;
  rule.infer = [](const OpContext& ctx) {
    Shape out = input_shape(ctx, 0);
    out[normalize_axis(ctx.node.attr_int("axis", -1), out.size())] = topk_k(ctx);
    return std::vector<OutputInfo>{output(input(ctx, 0).dtype, out), output(ElementType::i64, out)};
  };
  rule.iteration_space = [](const OpContext& ctx) {
    const Shape& x = input_shape(ctx, 0);
    const int axis = normalize_axis(ctx.node.attr_int("axis", -1), x.size());
    auto reduced = single_axis(ctx, x.size(), -1);
    IterationSpace s = reduction_space(ctx, reduced, true, 1);
    for (auto& dims : s.output_dims) {
      dims = identity_dims(x.size());
      dims[axis] = -1;
    }
    return s;
  };
  return rule;
}

OpRule cumsum_rule() {
  OpRule rule;
  rule.infer = [](const OpContext& ctx) {
    return std::vector<OutputInfo>{output(input(ctx, 0).dtype, input_shape(ctx, 0))};
  };
  rule.iteration_space = [](const OpContext& ctx) {
    const Shape& x = input_shape(ctx, 0);
    auto axis = ints_from_attr_or_input(ctx, "", 1);
    if (!axis || axis->size() != 1) throw std::runtime_error("CumSum axis must be a known scalar");
    std::vector<bool> scanned(x.size(), false);
    scanned[normalize_axis((*axis)[0], x.size())] = true;
    IterationSpace s = reduction_space(ctx, scanned, true, 1);
    s.output_dims = {identity_dims(x.size())};
    return s;
  };
  return rule;
}

}  // namespace

void register_reduction_ops(OpRegistry& r) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceLogSum"}) {
    r.add("", op, reduce_rule(op, 1));
  }
  for (const char* op : {"ReduceL1", "ReduceL2", "ReduceSumSquare"}) r.add("", op, reduce_rule(op, 2));
  r.add("", "ReduceLogSumExp", reduce_rule("ReduceLogSumExp", 3));
  r.add("", "ArgMax", arg_rule());
  r.add("", "ArgMin", arg_rule());
  r.add("", "TopK", topk_rule());
  r.add("", "CumSum", cumsum_rule());
}

}  // namespace symtensor::compiler
