#include "compiler/ops/op_helpers.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace symtensor::compiler::ops {

std::optional<std::int64_t> as_int(const GiNaC::ex& e) {
  if (!GiNaC::is_a<GiNaC::numeric>(e)) return std::nullopt;
  const auto& n = GiNaC::ex_to<GiNaC::numeric>(e);
  if (!n.is_integer()) return std::nullopt;
  return n.to_long();
}

bool is_one(const GiNaC::ex& e) { return e.is_equal(GiNaC::ex(1)); }

GiNaC::ex simplify(const GiNaC::ex& e) { return GiNaC::normal(GiNaC::expand(e)); }

bool same_extent(const GiNaC::ex& a, const GiNaC::ex& b) {
  return a.is_equal(b) || simplify(a - b).is_zero();
}

GiNaC::ex product(const Shape& shape, std::size_t begin, std::size_t end) {
  GiNaC::ex p = 1;
  for (std::size_t i = begin; i < shape.size() && i < end; ++i) p *= shape[i];
  return p;
}

bool has_input(const OpContext& ctx, std::size_t i) {
  return i < ctx.inputs.size() && ctx.inputs[i] != nullptr;
}

const Tensor& input(const OpContext& ctx, std::size_t i) {
  if (!has_input(ctx, i)) {
    throw std::runtime_error(ctx.node.op_type + ": required input " + std::to_string(i) + " is missing");
  }
  return *ctx.inputs[i];
}

const Shape& input_shape(const OpContext& ctx, std::size_t i) {
  const Tensor& t = input(ctx, i);
  if (!t.shape_known) {
    throw std::runtime_error(ctx.node.op_type + ": shape of input " + std::to_string(i) + " ('" +
                             t.name + "') is unknown");
  }
  return t.shape;
}

std::size_t num_outputs(const OpContext& ctx) { return ctx.node.outputs.size(); }

bool has_output(const OpContext& ctx, std::size_t i) {
  return i < ctx.outputs.size() && ctx.outputs[i] != nullptr;
}

const Shape& output_shape(const OpContext& ctx, std::size_t i) {
  if (!has_output(ctx, i) || !ctx.outputs[i]->shape_known) {
    throw std::runtime_error(ctx.node.op_type + ": shape of output " + std::to_string(i) + " is unknown");
  }
  return ctx.outputs[i]->shape;
}

int normalize_axis(std::int64_t axis, std::size_t rank, const char* what) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r) {
    throw std::runtime_error(std::string(what) + " " + std::to_string(axis) + " is out of range for rank " +
                             std::to_string(rank));
  }
  return static_cast<int>(axis < 0 ? axis + r : axis);
}

std::vector<int> normalize_axes(const std::vector<std::int64_t>& axes, std::size_t rank) {
  std::vector<int> out;
  for (auto a : axes) {
    int n = normalize_axis(a, rank, "axes element");
    for (int seen : out) {
      if (seen == n) throw std::runtime_error("axis " + std::to_string(a) + " is repeated");
    }
    out.push_back(n);
  }
  return out;
}

std::optional<Values> input_value(const OpContext& ctx, std::size_t i) {
  if (!has_input(ctx, i)) return std::nullopt;
  return ctx.inputs[i]->value;
}

std::optional<Values> values_from_attr_or_input(const OpContext& ctx, const std::string& attr,
                                                std::size_t input_index) {
  if (ctx.node.attribute(attr) != nullptr) {
    auto ints = ctx.node.attr_ints(attr);
    if (!ints) throw std::runtime_error("attribute '" + attr + "' is not a list of integers");
    Values v;
    for (auto x : *ints) v.push_back(GiNaC::ex(static_cast<long>(x)));
    return v;
  }
  if (!has_input(ctx, input_index)) return std::nullopt;
  const Tensor& t = *ctx.inputs[input_index];
  if (!t.value) {
    throw std::runtime_error("input " + std::to_string(input_index) + " ('" + t.name +
                             "') must be known at compile time");
  }
  return t.value;
}

std::optional<std::vector<std::int64_t>> ints_from_attr_or_input(const OpContext& ctx,
                                                                 const std::string& attr,
                                                                 std::size_t input_index) {
  auto values = values_from_attr_or_input(ctx, attr, input_index);
  if (!values) return std::nullopt;
  std::vector<std::int64_t> out;
  for (const auto& v : *values) {
    auto i = as_int(v);
    if (!i) throw std::runtime_error("'" + attr + "' must be integers known at compile time");
    out.push_back(*i);
  }
  return out;
}

Shape broadcast_shapes(const std::vector<Shape>& shapes) {
  std::size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, GiNaC::ex(1));
  for (std::size_t k = 0; k < rank; ++k) {
    bool chosen = false;
    for (const auto& s : shapes) {
      if (s.size() + k < rank) continue;
      const GiNaC::ex& d = s[s.size() + k - rank];
      if (is_one(d)) continue;
      if (!chosen) {
        out[k] = d;
        chosen = true;
        continue;
      }
      if (same_extent(out[k], d)) continue;
      bool a_num = GiNaC::is_a<GiNaC::numeric>(out[k]), b_num = GiNaC::is_a<GiNaC::numeric>(d);
      if (a_num && b_num) {
        std::ostringstream msg;
        msg << "cannot broadcast extent " << out[k] << " with " << d;
        throw std::runtime_error(msg.str());
      }
      // A symbolic extent against a number: the number is what it must be at run time.
      // Two different symbols: keep the first (they must be equal at run time).
      if (b_num) out[k] = d;
    }
  }
  return out;
}

std::vector<int> broadcast_dim_map(const Shape& operand, const Shape& result) {
  std::vector<int> map(operand.size(), -1);
  const std::size_t offset = result.size() - std::min(result.size(), operand.size());
  for (std::size_t i = 0; i < operand.size(); ++i) {
    const std::size_t r = offset + i;
    if (r >= result.size()) continue;
    map[i] = (is_one(operand[i]) && !is_one(result[r])) ? -1 : static_cast<int>(r);
  }
  return map;
}

std::optional<Values> broadcast_values(const std::vector<std::optional<Values>>& operands,
                                       const std::function<GiNaC::ex(const Values&)>& f) {
  std::size_t n = 1;
  for (const auto& v : operands) {
    if (!v || v->empty()) return std::nullopt;
    if (v->size() != 1) {
      if (n != 1 && n != v->size()) return std::nullopt;
      n = v->size();
    }
  }
  Values out;
  for (std::size_t i = 0; i < n; ++i) {
    Values args;
    for (const auto& v : operands) args.push_back(v->size() == 1 ? (*v)[0] : (*v)[i]);
    out.push_back(f(args));
  }
  return out;
}

namespace {
// Which side of a reshape group must take in another dim: +1 when the input product is
// larger (take an output dim), -1 when smaller (take an input dim), 0 when equal, 2 when
// undecidable (take one of each).
int compare_products(const GiNaC::ex& in, const GiNaC::ex& out) {
  GiNaC::ex r = simplify(in / out);
  if (is_one(r)) return 0;
  if (GiNaC::is_a<GiNaC::numeric>(r)) return GiNaC::ex_to<GiNaC::numeric>(r) > 1 ? 1 : -1;
  GiNaC::ex nd = GiNaC::numer_denom(r);
  if (GiNaC::is_a<GiNaC::numeric>(nd.op(1))) return 1;
  if (GiNaC::is_a<GiNaC::numeric>(nd.op(0))) return -1;
  return 2;
}
}  // namespace

std::vector<int> reshape_dim_map(const Shape& in, const Shape& out) {
  std::vector<int> map(in.size(), -1);
  std::size_t i = 0, j = 0;
  while (i < in.size() && j < out.size()) {
    if (is_one(in[i])) { ++i; continue; }
    if (is_one(out[j])) { ++j; continue; }
    const std::size_t group_in = i, group_out = j;
    GiNaC::ex pin = in[i++], pout = out[j++];
    bool matched = true;
    for (int cmp = compare_products(pin, pout); cmp != 0; cmp = compare_products(pin, pout)) {
      const bool take_out = cmp == 1 || cmp == 2, take_in = cmp == -1 || cmp == 2;
      if ((take_out && j >= out.size()) || (take_in && i >= in.size())) { matched = false; break; }
      if (take_out) pout *= out[j++];
      if (take_in) pin *= in[i++];
    }
    map[group_in] = static_cast<int>(group_out);
    if (!matched) break;
  }
  return map;
}

GiNaC::ex tensor_bytes(const Tensor& t) {
  if (!t.shape_known) throw std::runtime_error("shape of tensor '" + t.name + "' is unknown");
  return product(t.shape) * static_cast<long>(element_size(t.dtype));
}

GiNaC::ex io_bytes(const OpContext& ctx) {
  GiNaC::ex total = 0;
  for (const Tensor* t : ctx.inputs) if (t) total += tensor_bytes(*t);
  for (const Tensor* t : ctx.outputs) if (t) total += tensor_bytes(*t);
  return total;
}

int add_loop(IterationSpace& space, std::string name, GiNaC::ex extent, bool reduction) {
  space.loops.push_back(LoopDim{std::move(name), std::move(extent), reduction});
  return static_cast<int>(space.loops.size()) - 1;
}

int add_indexed_loop(IterationSpace& space, const char* prefix, std::size_t index, GiNaC::ex extent,
                     bool reduction) {
  return add_loop(space, prefix + std::to_string(index), std::move(extent), reduction);
}

std::vector<int> identity_dims(std::size_t rank, int first) {
  std::vector<int> dims(rank);
  for (std::size_t i = 0; i < rank; ++i) dims[i] = first + static_cast<int>(i);
  return dims;
}

IterationSpace pointwise_space(const OpContext& ctx, OpKind kind, GiNaC::ex flops_per_element) {
  IterationSpace space;
  space.kind = kind;
  const Shape& out = output_shape(ctx, 0);
  for (std::size_t d = 0; d < out.size(); ++d) add_indexed_loop(space, "d", d, out[d]);
  for (const Tensor* t : ctx.inputs) {
    space.input_dims.push_back(t ? broadcast_dim_map(t->shape, out) : std::vector<int>{});
  }
  for (const Tensor* t : ctx.outputs) {
    space.output_dims.push_back(t ? broadcast_dim_map(t->shape, out) : std::vector<int>{});
  }
  space.flops = flops_per_element * product(out);
  space.bytes = io_bytes(ctx);
  return space;
}

GiNaC::ex div_floor(const GiNaC::ex& a, std::int64_t b) {
  if (b == 1) return a;
  if (b == 0) throw std::runtime_error("division of an extent by 0");
  if (auto n = as_int(a)) {
    std::int64_t q = *n / b;
    if ((*n % b != 0) && ((*n < 0) != (b < 0))) --q;
    return GiNaC::ex(static_cast<long>(q));
  }
  if (b < 0) return floor_div(simplify(-a), GiNaC::ex(static_cast<long>(-b)));
  return floor_div(simplify(a), GiNaC::ex(static_cast<long>(b)));
}

GiNaC::ex div_ceil(const GiNaC::ex& a, std::int64_t b) {
  if (b == 0) throw std::runtime_error("division of an extent by 0");
  if (auto n = as_int(a)) return -div_floor(GiNaC::ex(static_cast<long>(-*n)), b);
  // ceil(a / b) of integers is floor((a + |b| - 1) / |b|), with a's sign turned for b < 0.
  const GiNaC::ex num = b < 0 ? -a : a;
  const std::int64_t den = b < 0 ? -b : b;
  if (den == 1) return simplify(num);
  return floor_div(simplify(num + static_cast<long>(den - 1)), GiNaC::ex(static_cast<long>(den)));
}

namespace {

// floor(q) of a rational q.
GiNaC::numeric floor_of(const GiNaC::numeric& q) {
  const GiNaC::numeric n = q.numer(), d = q.denom();  // d > 0
  GiNaC::numeric f = GiNaC::iquo(n, d);
  if (n.is_negative() && f * d != n) f -= 1;
  return f;
}

GiNaC::ex floor_div_eval(const GiNaC::ex& a, const GiNaC::ex& b) {
  if (!GiNaC::is_a<GiNaC::numeric>(b) || !b.info(GiNaC::info_flags::posint)) return floor_div(a, b).hold();
  const GiNaC::numeric d = GiNaC::ex_to<GiNaC::numeric>(b);
  if (GiNaC::is_a<GiNaC::numeric>(a)) {
    const GiNaC::numeric x = GiNaC::ex_to<GiNaC::numeric>(a);
    if (x.is_rational()) return floor_of(x / d);
    if (x.is_real()) return GiNaC::numeric(std::floor((x / d).to_double()));
    return floor_div(a, b).hold();
  }
  const GiNaC::ex e = GiNaC::expand(a);
  if (e.info(GiNaC::info_flags::integer_polynomial) && GiNaC::irem(e.integer_content(), d).is_zero())
    return GiNaC::expand(e / d);
  GiNaC::numeric constant = 0;
  if (GiNaC::is_a<GiNaC::add>(e))
    for (std::size_t i = 0; i < e.nops(); ++i)
      if (GiNaC::is_a<GiNaC::numeric>(e.op(i))) constant = GiNaC::ex_to<GiNaC::numeric>(e.op(i));
  if (constant.is_integer()) {
    const GiNaC::numeric whole = floor_of(constant / d);
    if (!whole.is_zero()) return floor_div(e - whole * d, b) + whole;
    // 0 <= constant < d over a multiple of d (dims are integers): floor((d·p + c) / d) == p.
    const GiNaC::ex rest = GiNaC::expand(e - constant);
    if (!constant.is_zero() && rest.info(GiNaC::info_flags::integer_polynomial) &&
        GiNaC::irem(rest.integer_content(), d).is_zero())
      return GiNaC::expand(rest / d);
  }
  return floor_div(e, b).hold();
}

GiNaC::ex floor_div_evalf(const GiNaC::ex& a, const GiNaC::ex& b) { return floor_div_eval(a.evalf(), b.evalf()); }

}  // namespace

REGISTER_FUNCTION(floor_div, eval_func(floor_div_eval).evalf_func(floor_div_evalf))

WindowAttrs window_attrs(const OpContext& ctx, std::size_t spatial, std::vector<std::int64_t> kernel) {
  WindowAttrs w;
  w.kernel = ctx.node.attr_ints("kernel_shape").value_or(kernel);
  w.strides = ctx.node.attr_ints("strides").value_or(std::vector<std::int64_t>(spatial, 1));
  w.dilations = ctx.node.attr_ints("dilations").value_or(std::vector<std::int64_t>(spatial, 1));
  w.pads = ctx.node.attr_ints("pads").value_or(std::vector<std::int64_t>(2 * spatial, 0));
  w.auto_pad = ctx.node.attr_string("auto_pad", "NOTSET");
  w.ceil_mode = ctx.node.attr_int("ceil_mode", 0) != 0;
  if (w.kernel.size() != spatial || w.strides.size() != spatial || w.dilations.size() != spatial ||
      w.pads.size() != 2 * spatial) {
    throw std::runtime_error("kernel_shape/strides/dilations/pads do not match " + std::to_string(spatial) +
                             " spatial dims");
  }
  for (auto s : w.strides) if (s <= 0) throw std::runtime_error("strides must be positive");
  return w;
}

GiNaC::ex window_output_extent(const GiNaC::ex& in, std::size_t i, const WindowAttrs& w) {
  const std::int64_t effective = (w.kernel[i] - 1) * w.dilations[i] + 1;
  const long stride = static_cast<long>(w.strides[i]);
  if (w.auto_pad == "SAME_UPPER" || w.auto_pad == "SAME_LOWER") return floor_div(in + stride - 1, stride);
  std::int64_t pads = w.auto_pad == "VALID" ? 0 : w.pads[i] + w.pads[i + w.kernel.size()];
  GiNaC::ex span = in + static_cast<long>(pads - effective);
  return simplify((w.ceil_mode ? floor_div(span + stride - 1, stride) : floor_div(span, stride)) + 1);
}

// Loops over output 0's dims; output 0 maps identically, inputs as given (absent ones
// [-1 ...] of their rank).
IterationSpace movement_space(const OpContext& ctx, std::vector<std::vector<int>> input_dims) {
  IterationSpace s;
  s.kind = OpKind::data_movement;
  const Shape& out = output_shape(ctx, 0);
  for (std::size_t d = 0; d < out.size(); ++d) add_indexed_loop(s, "d", d, out[d]);
  input_dims.resize(ctx.inputs.size());
  for (std::size_t i = 0; i < ctx.inputs.size(); ++i) {
    if (input_dims[i].empty() && has_input(ctx, i)) input_dims[i].assign(input(ctx, i).shape.size(), -1);
  }
  s.input_dims = std::move(input_dims);
  s.output_dims = {identity_dims(out.size())};
  s.bytes = io_bytes(ctx);
  return s;
}

OutputInfo output(ElementType dtype, Shape shape, std::optional<Values> value) {
  OutputInfo info;
  info.dtype = dtype;
  info.shape = std::move(shape);
  info.value = std::move(value);
  return info;
}

}  // namespace symtensor::compiler::ops
