#pragma once
// Runs one op rule on hand-made tensors: infer, fill the outputs, then iteration_space.
#include <deque>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/ops/op_semantics.h"

namespace symtensor::compiler::testing {

using Values = std::vector<GiNaC::ex>;
using Attrs = std::map<std::string, AttributeValue>;

// True when the two expressions are equal as rational functions.
inline bool same(const GiNaC::ex& a, const GiNaC::ex& b) { return GiNaC::normal(GiNaC::expand(a - b)).is_zero(); }

inline ::testing::AssertionResult same_shape(const Shape& actual, const Shape& expected) {
  std::ostringstream a, e;
  for (const auto& x : actual) a << x << ' ';
  for (const auto& x : expected) e << x << ' ';
  if (actual.size() != expected.size()) return ::testing::AssertionFailure() << "[" << a.str() << "] vs [" << e.str() << "]";
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (!same(actual[i], expected[i])) return ::testing::AssertionFailure() << "[" << a.str() << "] vs [" << e.str() << "]";
  }
  return ::testing::AssertionSuccess();
}

struct OpRun {
  std::vector<Tensor*> outputs;
  IterationSpace space;
};

class OpHarness {
 public:
  SymbolTable symbols;

  GiNaC::ex sym(const std::string& name) { return symbols.get(name); }

  Tensor* tensor(Shape shape, ElementType dtype = ElementType::f32, std::optional<Values> value = std::nullopt) {
    Tensor& t = tensors_.emplace_back();
    t.name = "t" + std::to_string(tensors_.size());
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.shape_known = true;
    t.value = std::move(value);
    return &t;
  }
  // A 1-D int64 tensor with a known value (axes, shapes, pads ...).
  Tensor* ints(const std::vector<long>& v) {
    Values vals;
    for (long x : v) vals.push_back(x);
    return tensor({GiNaC::ex(static_cast<long>(v.size()))}, ElementType::i64, vals);
  }
  Tensor* scalar_int(long v) { return tensor({}, ElementType::i64, Values{GiNaC::ex(v)}); }

  Node node(const std::string& op, std::size_t inputs, Attrs attrs, int opset, std::size_t outputs,
            const std::string& domain = "") {
    Node n;
    n.name = op + "_node";
    n.op_type = op;
    n.domain = domain;
    n.opset = opset;
    n.attributes = std::move(attrs);
    n.inputs.assign(inputs, 0);
    n.outputs.assign(outputs, 0);
    return n;
  }

  // Shape function only.
  std::vector<OutputInfo> infer(const std::string& op, std::vector<Tensor*> inputs, Attrs attrs = {}, int opset = 17,
                                std::size_t outputs = 1, const std::string& domain = "") {
    const OpRule* rule = find_op_rule(domain, op);
    if (!rule) throw std::runtime_error("no rule for " + op);
    Node n = node(op, inputs.size(), std::move(attrs), opset, outputs, domain);
    std::vector<const Tensor*> in(inputs.begin(), inputs.end());
    std::vector<const Tensor*> out(outputs, nullptr);
    return rule->infer(OpContext{n, in, out, symbols});
  }

  // Shape function, then the iteration space over the inferred outputs.
  OpRun run(const std::string& op, std::vector<Tensor*> inputs, Attrs attrs = {}, int opset = 17,
            std::size_t outputs = 1, const std::string& domain = "") {
    auto infos = infer(op, inputs, attrs, opset, outputs, domain);
    OpRun r;
    for (std::size_t i = 0; i < outputs; ++i) {
      r.outputs.push_back(tensor(infos.at(i).shape, infos.at(i).dtype, infos.at(i).value));
    }
    Node n = node(op, inputs.size(), std::move(attrs), opset, outputs, domain);
    std::vector<const Tensor*> in(inputs.begin(), inputs.end());
    std::vector<const Tensor*> out(r.outputs.begin(), r.outputs.end());
    r.space = find_op_rule(domain, op)->iteration_space(OpContext{n, in, out, symbols});
    return r;
  }

 private:
  std::deque<Tensor> tensors_;
};

inline std::vector<bool> reductions(const IterationSpace& s) {
  std::vector<bool> r;
  for (const auto& l : s.loops) r.push_back(l.reduction);
  return r;
}

}  // namespace symtensor::compiler::testing
