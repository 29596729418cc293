// Pools and Resize. Pool loops: n, c, the output spatial loops, then one reduction loop per
// window dim; input spatial dims map to the output spatial loops (halo convention, as Conv).
// FLOPs: one per window element per output (compare or add). Global pools reduce the
// whole spatial extent: loops n, c, then spatial reduction loops.
// Resize/Upsample: loops are the output dims and every input dim maps to its output loop
// (a cut of a resized dim needs a halo). FLOPs per output element: nearest 0, linear 3 and
// cubic 7 per resized dim.
#include <cmath>
#include <stdexcept>
#include <variant>

#include "compiler/ops/op_families.h"
#include "compiler/ops/op_helpers.h"

namespace symtensor::compiler {
namespace {

using namespace ops;

WindowAttrs pool_window(const OpContext& ctx) {
  const Shape& x = input_shape(ctx, 0);
  if (x.size() < 3) throw std::runtime_error("pool input must have rank >= 3 (N, C, spatial...)");
  if (!ctx.node.attr_ints("kernel_shape")) throw std::runtime_error("pool has no kernel_shape");
  return window_attrs(ctx, x.size() - 2, {});
}

std::vector<OutputInfo> pool_infer(const OpContext& ctx) {
  const Shape& x = input_shape(ctx, 0);
  WindowAttrs w = pool_window(ctx);
  Shape out{x[0], x[1]};
  for (std::size_t i = 0; i + 2 < x.size(); ++i) out.push_back(window_output_extent(x[2 + i], i, w));
  std::vector<OutputInfo> outs{output(input(ctx, 0).dtype, out)};
  if (num_outputs(ctx) > 1) outs.push_back(output(ElementType::i64, out));  // MaxPool indices
  return outs;
}

IterationSpace pool_space(const OpContext& ctx) {
  const Shape& x = input_shape(ctx, 0);
  WindowAttrs w = pool_window(ctx);
  const Shape& out = output_shape(ctx, 0);
  IterationSpace s;
  s.kind = OpKind::reduction;
  add_loop(s, "n", x[0]);
  add_loop(s, "c", x[1]);
  for (std::size_t i = 2; i < out.size(); ++i) add_indexed_loop(s, "o", i - 2, out[i]);
  GiNaC::ex window = 1;
  for (std::size_t i = 0; i < w.kernel.size(); ++i) {
    add_indexed_loop(s, "k", i, static_cast<long>(w.kernel[i]), true);
    window *= static_cast<long>(w.kernel[i]);
  }
  s.input_dims = {identity_dims(x.size())};
  for (std::size_t o = 0; o < ctx.outputs.size(); ++o) s.output_dims.push_back(identity_dims(out.size()));
  s.flops = product(out) * window;
  s.bytes = io_bytes(ctx);
  return s;
}

std::vector<OutputInfo> global_pool_infer(const OpContext& ctx) {
  Shape out = input_shape(ctx, 0);
  if (out.size() < 2) throw std::runtime_error("global pool input must have rank >= 2");
  for (std::size_t d = 2; d < out.size(); ++d) out[d] = 1;
  return {output(input(ctx, 0).dtype, out)};
}

IterationSpace global_pool_space(const OpContext& ctx) {
  const Shape& x = input_shape(ctx, 0);
  IterationSpace s;
  s.kind = OpKind::reduction;
  add_loop(s, "n", x[0]);
  add_loop(s, "c", x[1]);
  std::vector<int> out{0, 1};
  for (std::size_t d = 2; d < x.size(); ++d) {
    add_indexed_loop(s, "s", d - 2, x[d], true);
    out.push_back(-1);
  }
  s.input_dims = {identity_dims(x.size())};
  s.output_dims = {out};
  s.flops = product(x);
  s.bytes = io_bytes(ctx);
  return s;
}

// A float scale as an exact rational when it is one with a small denominator (0.5 -> 1/2).
GiNaC::ex exact_scale(const GiNaC::ex& scale) {
  if (!GiNaC::is_a<GiNaC::numeric>(scale)) return scale;
  const double v = GiNaC::ex_to<GiNaC::numeric>(scale).to_double();
  for (long den = 1; den <= 64; ++den) {
    const double num = v * den;
    if (std::abs(num - std::round(num)) < 1e-9) return GiNaC::numeric(static_cast<long>(std::round(num)), den);
  }
  return GiNaC::numeric(v);
}

// Output shape of Resize (X, roi, scales, sizes; opset 10: X, scales) or Upsample (X, scales;
// scales attribute before opset 9).
Shape resize_shape(const OpContext& ctx) {
  const Shape& x = input_shape(ctx, 0);
  const bool scales_second = ctx.node.op_type == "Upsample" || ctx.node.opset == 10;
  auto sizes = scales_second ? std::nullopt : input_value(ctx, 3);
  std::optional<Values> scales;
  if (auto* a = ctx.node.attribute("scales"); a && std::holds_alternative<std::vector<double>>(*a)) {
    scales = Values{};
    for (double d : std::get<std::vector<double>>(*a)) scales->push_back(GiNaC::numeric(d));
  } else {
    scales = input_value(ctx, scales_second ? 1 : 2);
  }
  auto axes = ctx.node.attr_ints("axes");  // opset 18
  std::vector<int> dims = axes ? normalize_axes(*axes, x.size()) : identity_dims(x.size());
  Shape out = x;
  if (sizes && !sizes->empty()) {
    if (sizes->size() != dims.size()) throw std::runtime_error("Resize sizes do not match the resized dims");
    for (std::size_t i = 0; i < dims.size(); ++i) out[dims[i]] = (*sizes)[i];
    return out;
  }
  if (!scales || scales->empty()) throw std::runtime_error("Resize scales/sizes are not known at compile time");
  if (scales->size() != dims.size()) throw std::runtime_error("Resize scales do not match the resized dims");
  for (std::size_t i = 0; i < dims.size(); ++i) {
    GiNaC::ex e = simplify(x[dims[i]] * exact_scale((*scales)[i]));
    if (GiNaC::is_a<GiNaC::numeric>(e)) e = static_cast<long>(std::floor(GiNaC::ex_to<GiNaC::numeric>(e).to_double()));
    out[dims[i]] = e;
  }
  return out;
}

IterationSpace resize_space(const OpContext& ctx) {
  const Shape& x = input_shape(ctx, 0);
  const Shape& out = output_shape(ctx, 0);
  IterationSpace s = movement_space(ctx, {identity_dims(x.size())});
  long resized = 0;
  for (std::size_t d = 0; d < x.size() && d < out.size(); ++d) resized += same_extent(x[d], out[d]) ? 0 : 1;
  const std::string mode = ctx.node.attr_string("mode", "nearest");
  const long per_dim = mode == "linear" || mode == "bilinear" ? 3 : (mode == "cubic" ? 7 : 0);
  if (per_dim > 0) s.kind = OpKind::elementwise;
  s.flops = per_dim * resized * product(out);
  return s;
}

}  // namespace

void register_pooling_ops(OpRegistry& r) {
  for (const char* op : {"MaxPool", "AveragePool", "LpPool"}) r.add("", op, {pool_infer, pool_space});
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) {
    r.add("", op, {global_pool_infer, global_pool_space});
  }
  auto resize_infer = [](const OpContext& ctx) {
    return std::vector<OutputInfo>{output(input(ctx, 0).dtype, resize_shape(ctx))};
  };
  r.add("", "Resize", {resize_infer, resize_space});
  r.add("", "Upsample", {resize_infer, resize_space});
}

}  // namespace symtensor::compiler
