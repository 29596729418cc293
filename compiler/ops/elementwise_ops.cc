// Element-wise operators. Loops d0..dn are the output dims; operands map by numpy
// broadcasting (a stretched size-1 dim maps to -1).
//
// FLOPs per output element: each arithmetic operation or elementary function (exp, log,
// sqrt, erf, tanh, pow, sin ...) counts 1. Hence: Add/Sub/Mul/Div/Pow/Mod/compare/logic 1;
// Relu/Neg/Abs/Exp/Log/Sqrt/Erf/Tanh/Reciprocal ... 1; LeakyRelu/PRelu 2 (compare, multiply);
// Sigmoid 4 (neg, exp, add, divide); Softplus 3; Softsign 3; Elu 3; Selu 4; Celu 3;
// HardSigmoid 3; HardSwish 4; Mish 5; Gelu/FastGelu 8 (tanh form: cube 2, scale 1, add 1,
// scale 1, tanh 1, add 1, multiply by 0.5x 1);
// QuickGelu 6; BiasGelu 9; Clip 2; Where 1; Sum/Max/Min of n inputs n-1, Mean n;
// Cast, Identity, Dropout (inference) 0.
#include <cmath>
#include <stdexcept>

#include "compiler/ops/op_families.h"
#include "compiler/ops/op_helpers.h"

namespace symtensor::compiler {
namespace {

using namespace ops;

enum class ShapeFrom { first_input, all_inputs };
enum class DTypeFrom { first_input, boolean, second_input, cast_to };
// Values of the output from the values of all inputs (nullopt: unknown).
using ValueFn = std::function<std::optional<Values>(const OpContext&)>;

bool is_integer_type(ElementType t) {
  switch (t) {
    case ElementType::i8: case ElementType::i16: case ElementType::i32: case ElementType::i64:
    case ElementType::u8: case ElementType::u16: case ElementType::u32: case ElementType::u64:
    case ElementType::boolean:
      return true;
    default:
      return false;
  }
}

// Values of a rank <= 1 result computed element by element from all present inputs.
ValueFn elementwise_values(std::function<std::optional<GiNaC::ex>(const Values&, ElementType)> f) {
  return [f](const OpContext& ctx) -> std::optional<Values> {
    std::vector<std::optional<Values>> operands;
    for (std::size_t i = 0; i < ctx.inputs.size(); ++i) {
      if (!has_input(ctx, i)) continue;
      if (ctx.inputs[i]->shape.size() > 1) return std::nullopt;
      operands.push_back(ctx.inputs[i]->value);
    }
    const ElementType dtype = input(ctx, 0).dtype;
    bool known = true;
    auto values = broadcast_values(operands, [&](const Values& args) -> GiNaC::ex {
      auto r = f(args, dtype);
      if (!r) { known = false; return 0; }
      return *r;
    });
    if (!known) return std::nullopt;
    return values;
  };
}

std::optional<GiNaC::ex> int_divide(const GiNaC::ex& a, const GiNaC::ex& b, ElementType dtype) {
  if (b.is_zero()) return std::nullopt;
  auto x = as_int(a), y = as_int(b);
  if (x && y && is_integer_type(dtype)) return GiNaC::ex(static_cast<long>(*x / *y));  // C truncation
  return simplify(a / b);
}

// Integer Mod with fmod = 0: the result takes the divisor's sign (Python's %), as exporters
// use it on dims (Swin's padding to a multiple of the window).
std::optional<GiNaC::ex> int_modulo(const GiNaC::ex& a, const GiNaC::ex& b, ElementType dtype) {
  auto x = as_int(a), y = as_int(b);
  if (!x || !y || *y == 0 || !is_integer_type(dtype)) return std::nullopt;
  std::int64_t r = *x % *y;
  if (r != 0 && ((r < 0) != (*y < 0))) r += *y;
  return GiNaC::ex(static_cast<long>(r));
}

// Every symbol is a dim, so positive: sums and products of dims and positive numbers are.
bool surely_positive(const GiNaC::ex& e) {
  if (GiNaC::is_a<GiNaC::numeric>(e)) return GiNaC::ex_to<GiNaC::numeric>(e).is_positive();
  if (GiNaC::is_a<GiNaC::symbol>(e)) return true;
  if (GiNaC::is_a<GiNaC::add>(e) || GiNaC::is_a<GiNaC::mul>(e)) {
    for (std::size_t i = 0; i < e.nops(); ++i)
      if (!surely_positive(e.op(i))) return false;
    return true;
  }
  if (GiNaC::is_a<GiNaC::power>(e)) return surely_positive(e.op(0));
  return false;
}

// A dim is never -1 or 0: exporters compare shapes with -1 to resolve expand(-1) (Equal
// then Where), which folds only when such comparisons do.
std::optional<GiNaC::ex> equal_value(const GiNaC::ex& a, const GiNaC::ex& b) {
  if (same_extent(a, b)) return GiNaC::ex(1);
  if (GiNaC::is_a<GiNaC::numeric>(a) && GiNaC::is_a<GiNaC::numeric>(b)) return GiNaC::ex(0);
  const GiNaC::ex difference = (a - b).expand();
  if (surely_positive(difference) || surely_positive(-difference)) return GiNaC::ex(0);
  return std::nullopt;
}

OpRule pointwise_rule(GiNaC::ex flops, ShapeFrom shape_from, DTypeFrom dtype_from, ValueFn value = {},
                      OpKind kind = OpKind::elementwise) {
  OpRule rule;
  rule.infer = [=](const OpContext& ctx) {
    Shape shape;
    if (shape_from == ShapeFrom::first_input) {
      shape = input_shape(ctx, 0);
    } else {
      std::vector<Shape> shapes;
      for (std::size_t i = 0; i < ctx.inputs.size(); ++i) if (has_input(ctx, i)) shapes.push_back(input_shape(ctx, i));
      shape = broadcast_shapes(shapes);
    }
    ElementType dtype = input(ctx, 0).dtype;
    if (dtype_from == DTypeFrom::boolean) dtype = ElementType::boolean;
    if (dtype_from == DTypeFrom::second_input) dtype = input(ctx, 1).dtype;
    if (dtype_from == DTypeFrom::cast_to) {
      auto to = ctx.node.attr_int("to", -1);
      if (to <= 0 || to > static_cast<int>(ElementType::bf16)) throw std::runtime_error("Cast has an invalid 'to'");
      dtype = static_cast<ElementType>(to);
    }
    std::vector<OutputInfo> outs{output(dtype, shape, value ? value(ctx) : std::nullopt)};
    if (outs[0].value && outs[0].value->size() > kMaxValueElements) outs[0].value.reset();
    for (std::size_t o = 1; o < num_outputs(ctx); ++o) outs.push_back(output(ElementType::boolean, shape));  // Dropout mask
    return outs;
  };
  rule.iteration_space = [=](const OpContext& ctx) {
    // Variadic ops: n inputs cost n-1 (or n for Mean) per element; `flops` < 0 encodes that.
    GiNaC::ex per_element = flops;
    if (GiNaC::is_a<GiNaC::numeric>(flops) && GiNaC::ex_to<GiNaC::numeric>(flops) < 0) {
      long n = 0;
      for (std::size_t i = 0; i < ctx.inputs.size(); ++i) n += has_input(ctx, i) ? 1 : 0;
      per_element = n + flops + 1;  // -2: n-1 (Sum/Max/Min); -1: n (Mean)
    }
    return pointwise_space(ctx, kind, per_element);
  };
  return rule;
}

void add_unary(OpRegistry& r, std::initializer_list<const char*> ops, long flops, const char* domain = "") {
  for (const char* op : ops) r.add(domain, op, pointwise_rule(flops, ShapeFrom::first_input, DTypeFrom::first_input));
}

}  // namespace

void register_elementwise_ops(OpRegistry& r) {
  add_unary(r, {"Relu", "Abs", "Sign", "Floor", "Ceil", "Round", "Reciprocal", "Sqrt", "Exp", "Log", "Erf", "Tanh",
                "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
                "ThresholdedRelu", "BitwiseNot"},
            1);
  add_unary(r, {"LeakyRelu"}, 2);
  add_unary(r, {"Sigmoid", "Selu", "HardSwish"}, 4);
  add_unary(r, {"Softplus", "Softsign", "Elu", "Celu", "HardSigmoid"}, 3);
  add_unary(r, {"Mish"}, 5);
  add_unary(r, {"Gelu"}, 8);
  add_unary(r, {"Gelu", "FastGelu"}, 8, "com.microsoft");
  add_unary(r, {"QuickGelu"}, 6, "com.microsoft");
  r.add("", "Neg", pointwise_rule(1, ShapeFrom::first_input, DTypeFrom::first_input,
                                  elementwise_values([](const Values& a, ElementType) { return std::optional(-a[0]); })));
  r.add("", "Not", pointwise_rule(1, ShapeFrom::first_input, DTypeFrom::boolean));
  r.add("", "IsNaN", pointwise_rule(1, ShapeFrom::first_input, DTypeFrom::boolean));
  r.add("", "IsInf", pointwise_rule(1, ShapeFrom::first_input, DTypeFrom::boolean));

  auto same = [](const Values& a, ElementType) { return std::optional(a[0]); };
  r.add("", "Identity", pointwise_rule(0, ShapeFrom::first_input, DTypeFrom::first_input, elementwise_values(same),
                                       OpKind::data_movement));
  r.add("", "Trilu", pointwise_rule(1, ShapeFrom::first_input, DTypeFrom::first_input));
  r.add("", "Dropout", pointwise_rule(0, ShapeFrom::first_input, DTypeFrom::first_input));
  r.add("", "Clip", pointwise_rule(2, ShapeFrom::first_input, DTypeFrom::first_input));
  auto cast_value = [](const OpContext& ctx) -> std::optional<Values> {
    auto v = input_value(ctx, 0);
    if (!v || input(ctx, 0).shape.size() > 1) return std::nullopt;
    ElementType to = static_cast<ElementType>(ctx.node.attr_int("to", 0));
    if (!is_integer_type(to)) return v;
    for (auto& e : *v) {
      if (!GiNaC::is_a<GiNaC::numeric>(e)) continue;  // a symbolic dim stays itself
      double d = GiNaC::ex_to<GiNaC::numeric>(e).to_double();
      e = to == ElementType::boolean ? GiNaC::ex(d != 0 ? 1 : 0) : GiNaC::ex(static_cast<long>(std::trunc(d)));
    }
    return v;
  };
  r.add("", "Cast", pointwise_rule(0, ShapeFrom::first_input, DTypeFrom::cast_to, cast_value));
  r.add("", "CastLike", pointwise_rule(0, ShapeFrom::first_input, DTypeFrom::second_input));

  auto binary = [&](const char* op, DTypeFrom dtype, std::function<std::optional<GiNaC::ex>(const Values&, ElementType)> f,
                    long flops = 1) {
    r.add("", op, pointwise_rule(flops, ShapeFrom::all_inputs, dtype, f ? elementwise_values(f) : ValueFn{}));
  };
  binary("Add", DTypeFrom::first_input, [](const Values& a, ElementType) { return std::optional(simplify(a[0] + a[1])); });
  binary("Sub", DTypeFrom::first_input, [](const Values& a, ElementType) { return std::optional(simplify(a[0] - a[1])); });
  binary("Mul", DTypeFrom::first_input, [](const Values& a, ElementType) { return std::optional(simplify(a[0] * a[1])); });
  binary("Div", DTypeFrom::first_input, [](const Values& a, ElementType t) { return int_divide(a[0], a[1], t); });
  binary("Pow", DTypeFrom::first_input, {});
  binary("Mod", DTypeFrom::first_input, [](const Values& a, ElementType t) { return int_modulo(a[0], a[1], t); });
  binary("BitShift", DTypeFrom::first_input, {});
  binary("PRelu", DTypeFrom::first_input, {}, 2);
  binary("Equal", DTypeFrom::boolean, [](const Values& a, ElementType) { return equal_value(a[0], a[1]); });
  for (const char* op : {"Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"}) {
    binary(op, DTypeFrom::boolean, {});
  }
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}) binary(op, DTypeFrom::first_input, {});
  r.add("com.microsoft", "BiasGelu", pointwise_rule(9, ShapeFrom::all_inputs, DTypeFrom::first_input));
  r.add("", "Where", pointwise_rule(1, ShapeFrom::all_inputs, DTypeFrom::second_input,
                                    [](const OpContext& ctx) -> std::optional<Values> {
                                      for (std::size_t i = 0; i < 3; ++i) {
                                        if (!has_input(ctx, i) || input(ctx, i).shape.size() > 1) return std::nullopt;
                                      }
                                      bool known = true;
                                      auto v = broadcast_values(
                                          {input_value(ctx, 0), input_value(ctx, 1), input_value(ctx, 2)},
                                          [&](const Values& a) -> GiNaC::ex {
                                            if (!GiNaC::is_a<GiNaC::numeric>(a[0])) { known = false; return 0; }
                                            return a[0].is_zero() ? a[2] : a[1];
                                          });
                                      if (!known) return std::nullopt;
                                      return v;
                                    }));
  auto min_max = [](bool is_max) {
    return [is_max](const Values& a, ElementType) -> std::optional<GiNaC::ex> {
      GiNaC::ex best = a[0];
      for (const auto& x : a) {
        if (!GiNaC::is_a<GiNaC::numeric>(x) || !GiNaC::is_a<GiNaC::numeric>(best)) return std::nullopt;
        bool greater = GiNaC::ex_to<GiNaC::numeric>(x) > GiNaC::ex_to<GiNaC::numeric>(best);
        if (greater == is_max && !x.is_equal(best)) best = x;
      }
      return best;
    };
  };
  r.add("", "Max", pointwise_rule(-2, ShapeFrom::all_inputs, DTypeFrom::first_input, elementwise_values(min_max(true))));
  r.add("", "Min", pointwise_rule(-2, ShapeFrom::all_inputs, DTypeFrom::first_input, elementwise_values(min_max(false))));
  r.add("", "Sum", pointwise_rule(-2, ShapeFrom::all_inputs, DTypeFrom::first_input));
  r.add("", "Mean", pointwise_rule(-1, ShapeFrom::all_inputs, DTypeFrom::first_input));
}

}  // namespace symtensor::compiler
