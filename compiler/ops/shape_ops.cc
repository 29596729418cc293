// Data-movement and shape operators: 0 FLOPs. Loops are the dims of output 0 (Split: of
// the input); an input dim that is not simply carried to one output dim maps to -1.
// Shape sub-graphs are folded here: Shape yields its input's (symbolic) shape as a value;
// Gather/Unsqueeze/Concat/Squeeze/Slice/Reshape carry small values along; Reshape, Expand,
// Tile and ConstantOfShape take their target from a known value (0 = copy, -1 = infer).
#include <stdexcept>

#include "compiler/ops/op_families.h"
#include "compiler/ops/op_helpers.h"
#include "compiler/ops/slice_bounds.h"

namespace symtensor::compiler {
namespace {

using namespace ops;

std::optional<Values> small_value(std::optional<Values> v) {
  if (v && v->size() > kMaxValueElements) return std::nullopt;
  return v;
}

// ---- Reshape / Flatten ----
Shape reshape_target(const OpContext& ctx) {
  const Shape& x = input_shape(ctx, 0);
  auto target = values_from_attr_or_input(ctx, "shape", 1);
  if (!target) throw std::runtime_error("Reshape has no target shape");
  const bool allow_zero = ctx.node.attr_int("allowzero", 0) != 0;
  Shape out;
  int infer_at = -1;
  GiNaC::ex known = 1;
  for (std::size_t i = 0; i < target->size(); ++i) {
    GiNaC::ex t = (*target)[i];
    auto n = as_int(t);
    if (n && *n == 0 && !allow_zero) {
      if (i >= x.size()) throw std::runtime_error("Reshape target copies dim " + std::to_string(i) + " beyond the input rank");
      t = x[i];
    } else if (n && *n == -1) {
      if (infer_at >= 0) throw std::runtime_error("Reshape target has more than one -1");
      infer_at = static_cast<int>(i);
    } else if (n && *n < -1) {
      throw std::runtime_error("Reshape target has a negative extent");
    }
    out.push_back(t);
    if (static_cast<int>(i) != infer_at) known *= t;
  }
  if (infer_at >= 0) out[infer_at] = simplify(product(x) / known);
  else if (!same_extent(product(x), product(out))) {
    std::ostringstream msg;
    msg << "Reshape changes the element count (" << product(x) << " -> " << product(out) << ")";
    throw std::runtime_error(msg.str());
  }
  return out;
}

std::vector<OutputInfo> reshape_infer(const OpContext& ctx) {
  return {output(input(ctx, 0).dtype, reshape_target(ctx), input(ctx, 0).value)};
}

IterationSpace reshape_space(const OpContext& ctx) {
  return movement_space(ctx, {reshape_dim_map(input_shape(ctx, 0), output_shape(ctx, 0))});
}

Shape flatten_shape(const OpContext& ctx) {
  const Shape& x = input_shape(ctx, 0);
  std::int64_t axis = ctx.node.attr_int("axis", 1);
  const auto rank = static_cast<std::int64_t>(x.size());
  if (axis < -rank || axis > rank) throw std::runtime_error("Flatten axis is out of range");
  if (axis < 0) axis += rank;
  return {product(x, 0, axis), product(x, axis)};
}

// ---- Transpose ----
std::vector<std::int64_t> transpose_perm(const OpContext& ctx, std::size_t rank) {
  auto perm = ctx.node.attr_ints("perm");
  std::vector<std::int64_t> p(rank);
  for (std::size_t i = 0; i < rank; ++i) p[i] = perm ? (*perm).at(i) : static_cast<std::int64_t>(rank - 1 - i);
  if (perm && perm->size() != rank) throw std::runtime_error("Transpose perm does not match the input rank");
  normalize_axes(p, rank);  // validates: in range, no repeats
  return p;
}

// The dims of a shape that are all numbers, else nullopt.
std::optional<std::vector<std::int64_t>> numeric_dims(const Shape& shape) {
  std::vector<std::int64_t> dims;
  for (const auto& d : shape) {
    auto n = as_int(d);
    if (!n) return std::nullopt;
    dims.push_back(*n);
  }
  return dims;
}

// The element of a row-major value at each output index, `source` mapping an output
// multi-index to the input's flat index. Used for small values of any rank (PyTorch's pad
// amounts: a [n, 2] tensor reversed and transposed).
template <typename Source>
Values gather_value(const Values& in, const std::vector<std::int64_t>& out_dims, Source source) {
  std::int64_t count = 1;
  for (auto d : out_dims) count *= d;
  Values out;
  std::vector<std::int64_t> index(out_dims.size(), 0);
  for (std::int64_t k = 0; k < count; ++k) {
    out.push_back(in.at(static_cast<std::size_t>(source(index))));
    for (std::size_t a = out_dims.size(); a-- > 0;) {
      if (++index[a] < out_dims[a]) break;
      index[a] = 0;
    }
  }
  return out;
}

std::int64_t flat_index(const std::vector<std::int64_t>& index, const std::vector<std::int64_t>& dims) {
  std::int64_t flat = 0;
  for (std::size_t a = 0; a < dims.size(); ++a) flat = flat * dims[a] + index[a];
  return flat;
}

std::vector<OutputInfo> transpose_infer(const OpContext& ctx) {
  const Shape& x = input_shape(ctx, 0);
  const auto perm = transpose_perm(ctx, x.size());
  Shape out;
  for (auto a : perm) out.push_back(x[a]);
  std::optional<Values> value;
  const auto in_dims = numeric_dims(x);
  const auto out_dims = numeric_dims(out);
  if (input(ctx, 0).value && in_dims && out_dims) {
    value = gather_value(*input(ctx, 0).value, *out_dims, [&](const std::vector<std::int64_t>& o) {
      std::vector<std::int64_t> i(o.size());
      for (std::size_t j = 0; j < perm.size(); ++j) i[perm[j]] = o[j];
      return flat_index(i, *in_dims);
    });
  }
  return {output(input(ctx, 0).dtype, out, value)};
}

IterationSpace transpose_space(const OpContext& ctx) {
  const Shape& x = input_shape(ctx, 0);
  auto perm = transpose_perm(ctx, x.size());
  std::vector<int> in(x.size());
  for (std::size_t j = 0; j < perm.size(); ++j) in[perm[j]] = static_cast<int>(j);
  return movement_space(ctx, {in});
}

// ---- Concat ----
std::vector<OutputInfo> concat_infer(const OpContext& ctx) {
  const Shape& first = input_shape(ctx, 0);
  const int axis = normalize_axis(ctx.node.attr_int("axis", 0), first.size());
  Shape out = first;
  out[axis] = 0;
  std::optional<Values> value = Values{};
  for (std::size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Shape& s = input_shape(ctx, i);
    if (s.size() != first.size()) throw std::runtime_error("Concat inputs have different ranks");
    out[axis] += s[axis];
    auto v = input(ctx, i).value;
    if (value && v && first.size() == 1) value->insert(value->end(), v->begin(), v->end());
    else value.reset();
  }
  out[axis] = simplify(out[axis]);
  return {output(input(ctx, 0).dtype, out, small_value(value))};
}

IterationSpace concat_space(const OpContext& ctx) {
  const std::size_t rank = input_shape(ctx, 0).size();
  const int axis = normalize_axis(ctx.node.attr_int("axis", 0), rank);
  std::vector<std::vector<int>> in;
  for (std::size_t i = 0; i < ctx.inputs.size(); ++i) {
    in.push_back(identity_dims(rank));
    in.back()[axis] = ctx.inputs.size() == 1 ? axis : -1;
  }
  return movement_space(ctx, in);
}

// ---- Split: `split` attribute (opset < 13) or input; else num_outputs equal parts ----
Shape split_sizes(const OpContext& ctx, const GiNaC::ex& extent) {
  auto split = values_from_attr_or_input(ctx, "split", 1);
  if (split) {
    if (split->size() != num_outputs(ctx)) throw std::runtime_error("Split sizes do not match the number of outputs");
    return *split;
  }
  const auto n = static_cast<std::int64_t>(num_outputs(ctx));
  if (n == 0) throw std::runtime_error("Split has no outputs");
  // ceil-sized parts and a shorter last one (opset 18's num_outputs rule).
  Shape sizes(n, div_ceil(extent, n));
  sizes.back() = simplify(extent - (n - 1) * sizes[0]);
  const auto whole = as_int(extent), last = as_int(sizes.back());
  if (whole && last && *last <= 0)
    throw std::runtime_error("Split of " + std::to_string(*whole) + " into " + std::to_string(n) + " equal parts leaves no last part");
  return sizes;
}

std::vector<OutputInfo> split_infer(const OpContext& ctx) {
  const Shape& x = input_shape(ctx, 0);
  const int axis = normalize_axis(ctx.node.attr_int("axis", 0), x.size());
  Shape sizes = split_sizes(ctx, x[axis]);
  auto value = input(ctx, 0).value;
  std::vector<OutputInfo> outs;
  std::size_t offset = 0;
  for (const auto& size : sizes) {
    Shape s = x;
    s[axis] = size;
    std::optional<Values> v;
    auto n = as_int(size);
    if (value && x.size() == 1 && n && offset + *n <= value->size()) {
      v = Values(value->begin() + offset, value->begin() + offset + *n);
      offset += *n;
    }
    outs.push_back(output(input(ctx, 0).dtype, s, v));
  }
  return outs;
}

IterationSpace split_space(const OpContext& ctx) {
  const Shape& x = input_shape(ctx, 0);
  const int axis = normalize_axis(ctx.node.attr_int("axis", 0), x.size());
  IterationSpace s;
  s.kind = OpKind::data_movement;
  for (std::size_t d = 0; d < x.size(); ++d) add_indexed_loop(s, "d", d, x[d]);
  s.input_dims.push_back(identity_dims(x.size()));
  if (has_input(ctx, 1)) s.input_dims.push_back({-1});
  for (std::size_t o = 0; o < ctx.outputs.size(); ++o) {
    s.output_dims.push_back(identity_dims(x.size()));
    s.output_dims.back()[axis] = ctx.outputs.size() == 1 ? axis : -1;
  }
  s.bytes = io_bytes(ctx);
  return s;
}

// ---- Slice: attributes before opset 10, inputs (starts, ends, axes, steps) after ----
std::vector<SliceAxis> slice_axes(const OpContext& ctx) {
  const Shape& x = input_shape(ctx, 0);
  auto starts = values_from_attr_or_input(ctx, "starts", 1);
  auto ends = values_from_attr_or_input(ctx, "ends", 2);
  if (!starts || !ends || starts->size() != ends->size()) throw std::runtime_error("Slice starts/ends are missing or differ in length");
  auto axes = ints_from_attr_or_input(ctx, "axes", 3);
  auto steps = ints_from_attr_or_input(ctx, "", 4);
  std::vector<SliceAxis> result;
  for (std::size_t i = 0; i < starts->size(); ++i) {
    SliceAxis a;
    a.axis = normalize_axis(axes ? axes->at(i) : static_cast<std::int64_t>(i), x.size());
    a.step = steps ? steps->at(i) : 1;
    if (a.step == 0) throw std::runtime_error("Slice step is 0");
    resolve_slice(x[a.axis], (*starts)[i], (*ends)[i], a);
    result.push_back(a);
  }
  return result;
}

std::vector<OutputInfo> slice_infer(const OpContext& ctx) {
  Shape out = input_shape(ctx, 0);
  auto axes = slice_axes(ctx);
  for (const auto& a : axes) out[a.axis] = a.extent;
  std::optional<Values> value;
  auto v = input(ctx, 0).value;
  const auto in_dims = numeric_dims(input_shape(ctx, 0));
  const auto out_dims = numeric_dims(out);
  bool numeric = in_dims && out_dims;
  for (const auto& a : axes) numeric = numeric && a.numeric_start.has_value();
  if (v && numeric) {
    value = gather_value(*v, *out_dims, [&](std::vector<std::int64_t> i) {
      for (const auto& a : axes) i[a.axis] = *a.numeric_start + i[a.axis] * a.step;
      return flat_index(i, *in_dims);
    });
  }
  return {output(input(ctx, 0).dtype, out, small_value(value))};
}

IterationSpace slice_space(const OpContext& ctx) {
  const Shape& x = input_shape(ctx, 0);
  std::vector<int> in = identity_dims(x.size());
  for (const auto& a : slice_axes(ctx)) if (!same_extent(a.extent, x[a.axis]) || a.step != 1) in[a.axis] = -1;
  return movement_space(ctx, {in});
}

// ---- Squeeze / Unsqueeze: axes attribute (opset < 13) or input ----
std::vector<bool> squeezed_dims(const OpContext& ctx) {
  const Shape& x = input_shape(ctx, 0);
  std::vector<bool> squeezed(x.size(), false);
  auto axes = ints_from_attr_or_input(ctx, "axes", 1);
  if (!axes) {
    for (std::size_t d = 0; d < x.size(); ++d) squeezed[d] = is_one(x[d]);
    return squeezed;
  }
  for (int a : normalize_axes(*axes, x.size())) {
    if (as_int(x[a]) && !is_one(x[a])) throw std::runtime_error("Squeeze of dim " + std::to_string(a) + " whose extent is not 1");
    squeezed[a] = true;
  }
  return squeezed;
}

std::vector<OutputInfo> squeeze_infer(const OpContext& ctx) {
  const Shape& x = input_shape(ctx, 0);
  auto squeezed = squeezed_dims(ctx);
  Shape out;
  for (std::size_t d = 0; d < x.size(); ++d) if (!squeezed[d]) out.push_back(x[d]);
  return {output(input(ctx, 0).dtype, out, input(ctx, 0).value)};
}

IterationSpace squeeze_space(const OpContext& ctx) {
  auto squeezed = squeezed_dims(ctx);
  std::vector<int> in;
  int next = 0;
  for (bool s : squeezed) in.push_back(s ? -1 : next++);
  return movement_space(ctx, {in});
}

std::vector<bool> unsqueezed_dims(const OpContext& ctx) {
  auto axes = ints_from_attr_or_input(ctx, "axes", 1);
  if (!axes) throw std::runtime_error("Unsqueeze has no axes");
  const std::size_t rank = input_shape(ctx, 0).size() + axes->size();
  std::vector<bool> inserted(rank, false);
  for (int a : normalize_axes(*axes, rank)) inserted[a] = true;
  return inserted;
}

std::vector<OutputInfo> unsqueeze_infer(const OpContext& ctx) {
  const Shape& x = input_shape(ctx, 0);
  Shape out;
  std::size_t next = 0;
  for (bool ins : unsqueezed_dims(ctx)) out.push_back(ins ? GiNaC::ex(1) : x[next++]);
  return {output(input(ctx, 0).dtype, out, input(ctx, 0).value)};
}

IterationSpace unsqueeze_space(const OpContext& ctx) {
  auto inserted = unsqueezed_dims(ctx);
  std::vector<int> in;
  for (std::size_t d = 0; d < inserted.size(); ++d) if (!inserted[d]) in.push_back(static_cast<int>(d));
  return movement_space(ctx, {in});
}

}  // namespace

void register_shape_ops(OpRegistry& r) {
  r.add("", "Reshape", rule(reshape_infer, reshape_space));
  r.add("", "Flatten", rule([](const OpContext& ctx) {
          return std::vector<OutputInfo>{output(input(ctx, 0).dtype, flatten_shape(ctx), input(ctx, 0).value)};
        }, reshape_space));
  r.add("", "Transpose", rule(transpose_infer, transpose_space));
  r.add("", "Concat", rule(concat_infer, concat_space));
  r.add("", "Split", rule(split_infer, split_space));
  r.add("", "Slice", rule(slice_infer, slice_space));
  r.add("", "Squeeze", rule(squeeze_infer, squeeze_space));
  r.add("", "Unsqueeze", rule(unsqueeze_infer, unsqueeze_space));
}

}  // namespace symtensor::compiler
