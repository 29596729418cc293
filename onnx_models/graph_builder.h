#pragma once
// Writes an onnx::GraphProto the way PyTorch's exporter names things: parameters get
// module paths ("h.0.attn.c_attn.weight"), intermediate values "/scope/Op_output_N".
// Parameters are either graph inputs (weight-free models) or deterministic random
// initializers, depending on the Weights mode.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnx_models/model_config.h"

namespace symtensor::models {

// One dimension of a graph input/output: a number or a symbol (dim_param).
struct Dim {
  std::int64_t value = 0;
  std::string param;
  Dim(std::int64_t v) : value(v) {}  // NOLINT: implicit on purpose, {batch, 3, 224}
  Dim(const char* p) : param(p) {}   // NOLINT
};

// How a random parameter is filled (ignored for weight-free models).
// Values are uniform in [center - spread, center + spread].
struct Init {
  float center = 0.0f;
  float spread = 0.0f;
  static Init uniform(double spread) { return {0.0f, static_cast<float>(spread)}; }
  static Init around(double center, double spread) {
    return {static_cast<float>(center), static_cast<float>(spread)};
  }
  static Init ones() { return {1.0f, 0.0f}; }
  static Init zeros() { return {0.0f, 0.0f}; }
};

using AttrValue = std::variant<std::int64_t, float, std::vector<std::int64_t>, std::string>;
struct Attr {
  std::string name;
  AttrValue value;
};

class GraphBuilder {
 public:
  GraphBuilder(onnx::GraphProto* graph, Weights weights, std::uint64_t seed);

  // Module scope for names: push("h.3") then push("attn") -> "/h.3/attn/MatMul_output_0".
  void push(const std::string& scope) { scopes_.push_back(scope); }
  void pop() { scopes_.pop_back(); }
  std::string module_path(const std::string& leaf) const;  // "h.3.attn.leaf"

  std::string input(const std::string& name, int elem_type, const std::vector<Dim>& dims);
  void output(const std::string& value, const std::string& name, int elem_type, const std::vector<Dim>& dims);

  // A float parameter named module_path(leaf); returns the value name.
  std::string parameter(const std::string& leaf, const std::vector<std::int64_t>& dims, Init init);

  // One node with one output; returns the output name.
  std::string op(const std::string& op_type, const std::vector<std::string>& inputs,
                 const std::vector<Attr>& attrs = {});
  std::vector<std::string> op_n(const std::string& op_type, const std::vector<std::string>& inputs,
                                int outputs, const std::vector<Attr>& attrs = {});

  // Constant nodes (exporter style, not initializers).
  std::string ints(const std::vector<std::int64_t>& values);  // 1-D int64
  std::string int_scalar(std::int64_t value);                 // 0-D int64
  std::string float_scalar(float value);                      // 0-D float
  std::string floats(const std::vector<float>& values);       // 1-D float

  const std::vector<std::string>& parameter_names() const { return parameter_names_; }
  std::int64_t parameter_elements() const { return parameter_elements_; }

 private:
  std::string scope_prefix() const;
  std::string fresh_output(const std::string& op_type);

  onnx::GraphProto* graph_;
  Weights weights_;
  std::uint64_t seed_;
  std::vector<std::string> scopes_;
  std::vector<std::string> parameter_names_;
  std::int64_t parameter_elements_ = 0;
  std::int64_t counter_ = 0;
};

}  // namespace symtensor::models
