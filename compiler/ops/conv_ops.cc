// Conv and ConvTranspose (N-d, groups, strides, pads, dilations).
// Loops: n, g (only when group > 1), c_out (output channels per group), the spatial loops,
// then the reductions c_in (input channels per group) and one per kernel dim. A channel
// dim of size group x per-group maps to g, the outer loop of the pair (reshape convention).
// Spatial dims of the input map to the spatial loops of the output (Conv) and those of the
// output to the input's (ConvTranspose): cutting them needs a halo exchange.
// FLOPs: 2 per multiply-add, plus one per output element for the bias.
#include <stdexcept>

#include "compiler/ops/op_families.h"
#include "compiler/ops/op_helpers.h"

namespace symtensor::compiler {
namespace {

using namespace ops;

struct ConvGeometry {
  std::int64_t group = 1;
  std::size_t spatial = 0;
  GiNaC::ex n, c_in_total, c_out_total;
  Shape in_spatial, out_spatial, kernel;
};

std::vector<std::int64_t> numeric_kernel(const Shape& w) {
  std::vector<std::int64_t> k;
  for (std::size_t i = 2; i < w.size(); ++i) {
    auto v = as_int(w[i]);
    k.push_back(v ? *v : 1);
  }
  return k;
}

ConvGeometry conv_geometry(const OpContext& ctx, bool transposed) {
  const Shape& x = input_shape(ctx, 0);
  const Shape& w = input_shape(ctx, 1);
  if (x.size() < 3 || w.size() != x.size()) throw std::runtime_error("Conv input and weight must have the same rank >= 3");
  ConvGeometry g;
  g.group = ctx.node.attr_int("group", 1);
  if (g.group < 1) throw std::runtime_error("Conv group must be >= 1");
  g.spatial = x.size() - 2;
  g.n = x[0];
  g.c_in_total = x[1];
  g.c_out_total = transposed ? simplify(w[1] * g.group) : w[0];
  WindowAttrs win = window_attrs(ctx, g.spatial, numeric_kernel(w));
  for (std::size_t i = 0; i < g.spatial; ++i) {
    g.in_spatial.push_back(x[2 + i]);
    g.kernel.push_back(w[2 + i]);
  }
  if (!transposed) {
    for (std::size_t i = 0; i < g.spatial; ++i) g.out_spatial.push_back(window_output_extent(x[2 + i], i, win));
    return g;
  }
  auto output_shape = ctx.node.attr_ints("output_shape");
  auto output_padding = ctx.node.attr_ints("output_padding").value_or(std::vector<std::int64_t>(g.spatial, 0));
  for (std::size_t i = 0; i < g.spatial; ++i) {
    if (output_shape && output_shape->size() >= g.spatial) {
      g.out_spatial.push_back(GiNaC::ex(static_cast<long>((*output_shape)[output_shape->size() - g.spatial + i])));
    } else if (win.auto_pad == "SAME_UPPER" || win.auto_pad == "SAME_LOWER") {
      g.out_spatial.push_back(simplify(x[2 + i] * win.strides[i]));
    } else {
      std::int64_t pads = win.auto_pad == "VALID" ? 0 : win.pads[i] + win.pads[i + g.spatial];
      std::int64_t tail = output_padding.at(i) + (win.kernel[i] - 1) * win.dilations[i] + 1 - pads;
      g.out_spatial.push_back(simplify(win.strides[i] * (x[2 + i] - 1) + tail));
    }
  }
  return g;
}

std::vector<OutputInfo> conv_infer_impl(const OpContext& ctx, bool transposed) {
  ConvGeometry g = conv_geometry(ctx, transposed);
  Shape out{g.n, g.c_out_total};
  out.insert(out.end(), g.out_spatial.begin(), g.out_spatial.end());
  return {output(input(ctx, 0).dtype, out)};
}

IterationSpace conv_space_impl(const OpContext& ctx, bool transposed) {
  ConvGeometry g = conv_geometry(ctx, transposed);
  IterationSpace s;
  s.kind = OpKind::convolution;
  const bool grouped = g.group > 1;
  const GiNaC::ex groups = static_cast<long>(g.group);
  int n = add_loop(s, "n", g.n);
  int gl = grouped ? add_loop(s, "g", groups) : -1;
  int c_out = add_loop(s, "c_out", simplify(g.c_out_total / groups));
  const Shape& loop_spatial = transposed ? g.in_spatial : g.out_spatial;
  std::vector<int> spatial;
  for (std::size_t i = 0; i < g.spatial; ++i) spatial.push_back(add_indexed_loop(s, "o", i, loop_spatial[i]));
  int c_in = add_loop(s, "c_in", simplify(g.c_in_total / groups), true);
  std::vector<int> kernel;
  for (std::size_t i = 0; i < g.spatial; ++i) kernel.push_back(add_indexed_loop(s, "k", i, g.kernel[i], true));

  std::vector<int> x{n, grouped ? gl : c_in};
  x.insert(x.end(), spatial.begin(), spatial.end());
  std::vector<int> w{grouped ? gl : (transposed ? c_in : c_out), transposed ? c_out : c_in};
  w.insert(w.end(), kernel.begin(), kernel.end());
  std::vector<int> out{n, grouped ? gl : c_out};
  out.insert(out.end(), spatial.begin(), spatial.end());
  s.input_dims = {x, w};
  if (has_input(ctx, 2)) s.input_dims.push_back({grouped ? gl : c_out});
  s.output_dims = {out};

  GiNaC::ex points = 1;
  for (const auto& l : s.loops) points *= l.extent;
  s.flops = 2 * points;
  if (has_input(ctx, 2)) s.flops += g.n * g.c_out_total * product(g.out_spatial);
  s.bytes = io_bytes(ctx);
  return s;
}

}  // namespace

void register_conv_ops(OpRegistry& registry) {
  registry.add("", "Conv", {[](const OpContext& c) { return conv_infer_impl(c, false); },
                            [](const OpContext& c) { return conv_space_impl(c, false); }});
  registry.add("", "ConvTranspose", {[](const OpContext& c) { return conv_infer_impl(c, true); },
                                     [](const OpContext& c) { return conv_space_impl(c, true); }});
}

}  // namespace symtensor::compiler
