// Softmax and the normalizations. The normalized (or softmax) dims are loops marked
// `reduction`: cutting them needs the row statistics to be combined (communication).
// FLOPs per element of X: Softmax/LogSoftmax 5 (max, subtract, exp, sum, divide),
// Hardmax 2; LayerNormalization 8 (mean 2, centre 1, square 1, variance sum 1, normalize 1,
// scale 1, shift 1); SimplifiedLayerNormalization / RMSNormalization 4 (square, sum,
// normalize, scale); Skip* variants 2 more (residual and bias adds); BatchNormalization 4
// at inference (subtract mean, multiply by 1/std, scale, shift), 8 in training;
// InstanceNormalization 8.
#include <set>
#include <stdexcept>

#include "compiler/ops/op_families.h"
#include "compiler/ops/op_helpers.h"

namespace symtensor::compiler {
namespace {

using namespace ops;

// ---- Softmax family: opset < 13 flattens [axis, rank) into one softmax row ----
int softmax_axis(const OpContext& ctx, std::size_t rank) {
  const bool old = ctx.node.opset > 0 && ctx.node.opset < 13;
  return normalize_axis(ctx.node.attr_int("axis", old ? 1 : -1), rank);
}

OpRule softmax_rule(long flops) {
  OpRule rule;
  rule.infer = [](const OpContext& ctx) {
    const Shape& x = input_shape(ctx, 0);
    if (!x.empty()) softmax_axis(ctx, x.size());
    return std::vector<OutputInfo>{output(input(ctx, 0).dtype, x)};
  };
  rule.iteration_space = [flops](const OpContext& ctx) {
    IterationSpace s = pointwise_space(ctx, OpKind::softmax, flops);
    const std::size_t rank = input_shape(ctx, 0).size();
    if (rank == 0) return s;
    const int axis = softmax_axis(ctx, rank);
    const bool old = ctx.node.opset > 0 && ctx.node.opset < 13;
    for (std::size_t d = axis; d < (old ? rank : static_cast<std::size_t>(axis) + 1); ++d) s.loops[d].reduction = true;
    return s;
  };
  return rule;
}

// ---- Layer-style normalizations over dims [axis, rank) ----
// Inputs in `data_inputs` have X's shape; the others (scale, bias) cover X[axis:]. Outputs in
// `data_outputs` have X's shape; the others are row statistics X[:axis] + [1 ...].
struct LayerNormSpec {
  long flops;
  std::set<std::size_t> data_inputs;
  std::set<std::size_t> data_outputs;
  int default_axis = -1;
};

OpRule layer_norm_rule(LayerNormSpec spec) {
  OpRule rule;
  rule.infer = [spec](const OpContext& ctx) {
    const Shape& x = input_shape(ctx, 0);
    const int axis = normalize_axis(ctx.node.attr_int("axis", spec.default_axis), x.size());
    Shape stats(x.begin(), x.begin() + axis);
    stats.resize(x.size(), GiNaC::ex(1));
    const auto stash = static_cast<ElementType>(ctx.node.attr_int("stash_type", 1));
    std::vector<OutputInfo> outs;
    for (std::size_t o = 0; o < num_outputs(ctx); ++o) {
      outs.push_back(spec.data_outputs.count(o) ? output(input(ctx, 0).dtype, x) : output(stash, stats));
    }
    return outs;
  };
  rule.iteration_space = [spec](const OpContext& ctx) {
    const Shape& x = input_shape(ctx, 0);
    const int axis = normalize_axis(ctx.node.attr_int("axis", spec.default_axis), x.size());
    IterationSpace s;
    s.kind = OpKind::normalization;
    for (std::size_t d = 0; d < x.size(); ++d) add_indexed_loop(s, "d", d, x[d], static_cast<int>(d) >= axis);
    const Shape normalized(x.begin() + axis, x.end());
    for (std::size_t i = 0; i < ctx.inputs.size(); ++i) {
      if (!has_input(ctx, i)) { s.input_dims.emplace_back(); continue; }
      if (spec.data_inputs.count(i)) { s.input_dims.push_back(broadcast_dim_map(input_shape(ctx, i), x)); continue; }
      std::vector<int> dims = broadcast_dim_map(input_shape(ctx, i), normalized);
      for (int& d : dims) if (d >= 0) d += axis;
      s.input_dims.push_back(dims);
    }
    for (std::size_t o = 0; o < ctx.outputs.size(); ++o) {
      if (!has_output(ctx, o)) { s.output_dims.emplace_back(); continue; }
      std::vector<int> dims = identity_dims(x.size());
      if (!spec.data_outputs.count(o)) for (std::size_t d = axis; d < dims.size(); ++d) dims[d] = -1;
      s.output_dims.push_back(dims);
    }
    s.flops = spec.flops * product(x);
    s.bytes = io_bytes(ctx);
    return s;
  };
  return rule;
}

// ---- Channel normalizations over X [N, C, spatial...]: parameters are [C] ----
// `reduce_batch`: N is reduced too (BatchNormalization in training).
bool batch_norm_training(const OpContext& ctx) {
  if (ctx.node.opset >= 14) return ctx.node.attr_int("training_mode", 0) != 0;
  return num_outputs(ctx) > 1;  // opsets 9-13: the statistics outputs exist only in training
}

OpRule channel_norm_rule(bool batch_norm) {
  OpRule rule;
  rule.infer = [batch_norm](const OpContext& ctx) {
    const Shape& x = input_shape(ctx, 0);
    if (x.size() < 2) throw std::runtime_error("input must have rank >= 2 (N, C, ...)");
    std::vector<OutputInfo> outs{output(input(ctx, 0).dtype, x)};
    for (std::size_t o = 1; batch_norm && o < num_outputs(ctx); ++o) outs.push_back(output(input(ctx, 0).dtype, {x[1]}));
    return outs;
  };
  rule.iteration_space = [batch_norm](const OpContext& ctx) {
    const Shape& x = input_shape(ctx, 0);
    const bool reduce = !batch_norm || batch_norm_training(ctx);
    IterationSpace s;
    s.kind = OpKind::normalization;
    add_loop(s, "n", x[0], batch_norm && reduce);
    add_loop(s, "c", x[1]);
    for (std::size_t d = 2; d < x.size(); ++d) add_indexed_loop(s, "s", d - 2, x[d], reduce);
    s.input_dims.push_back(identity_dims(x.size()));
    for (std::size_t i = 1; i < ctx.inputs.size(); ++i) {
      s.input_dims.push_back(has_input(ctx, i) ? std::vector<int>{1} : std::vector<int>{});
    }
    s.output_dims.push_back(identity_dims(x.size()));
    for (std::size_t o = 1; o < ctx.outputs.size(); ++o) {
      s.output_dims.push_back(has_output(ctx, o) ? std::vector<int>{1} : std::vector<int>{});
    }
    s.flops = (reduce ? 8 : 4) * product(x);
    s.bytes = io_bytes(ctx);
    return s;
  };
  return rule;
}

}  // namespace

void register_normalization_ops(OpRegistry& r) {
  r.add("", "Softmax", softmax_rule(5));
  r.add("", "LogSoftmax", softmax_rule(5));
  r.add("", "Hardmax", softmax_rule(2));
  r.add("", "LayerNormalization", layer_norm_rule({8, {0}, {0}}));
  r.add("", "RMSNormalization", layer_norm_rule({4, {0}, {0}}));
  r.add("com.microsoft", "SimplifiedLayerNormalization", layer_norm_rule({4, {0}, {0}}));
  // SkipLayerNormalization: (input, skip, gamma, beta, bias) -> (output, mean, inv_std_var,
  // input_skip_bias_sum); SkipSimplified has no beta.
  r.add("com.microsoft", "SkipLayerNormalization", layer_norm_rule({10, {0, 1}, {0, 3}}));
  r.add("com.microsoft", "SkipSimplifiedLayerNormalization", layer_norm_rule({6, {0, 1}, {0, 3}}));
  r.add("", "BatchNormalization", channel_norm_rule(true));
  r.add("", "InstanceNormalization", channel_norm_rule(false));
}

}  // namespace symtensor::compiler
