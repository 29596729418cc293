#pragma once
// One pre-LN GPT layer written as PyTorch exports a training graph (with dropouts):
// LN -> Q,K,V -> heads -> scores/sqrt(d) -> softmax -> dropout -> ·V -> proj -> dropout
// -> residual, LN -> FC1 -> GELU (Div/Erf/Add/Mul/Mul) -> FC2 -> dropout -> residual.
#include "tests/compiler/onnx_test_util.h"

namespace symtensor::testing {

inline onnx::ModelProto gpt_training_layer(std::int64_t h, std::int64_t heads, bool weights_as_inputs = true) {
  const std::int64_t d = h / heads;
  const std::string b = "batch", s = "seq";
  auto m = make_model();
  add_input(m, "x", {b, s, h});
  std::string params;
  auto weight = [&](const std::string& name, std::vector<std::int64_t> dims) {
    if (weights_as_inputs) {
      std::vector<DimSpec> spec(dims.begin(), dims.end());
      add_input(m, name, spec);
      params += (params.empty() ? "" : ",") + name;
    } else {
      add_initializer(m, float_tensor(name, dims));
    }
  };
  for (const char* ln : {"ln1", "ln2"}) {
    weight(std::string(ln) + "_g", {h});
    weight(std::string(ln) + "_b", {h});
  }
  for (const char* w : {"w_q", "w_k", "w_v"}) weight(w, {h, h});
  weight("w_proj", {h, h});
  weight("w_fc1", {h, 4 * h});
  weight("w_fc2", {4 * h, h});
  add_initializer(m, int64_tensor("heads_shape", {0, 0, heads, d}));
  add_initializer(m, int64_tensor("merge_shape", {0, 0, h}));
  onnx::TensorProto scale;
  scale.set_name("sqrt_d");
  scale.set_data_type(onnx::TensorProto::FLOAT);
  scale.add_float_data(8.0f);
  add_initializer(m, scale);
  onnx::TensorProto sqrt2 = scale, one = scale, half = scale, ratio = scale;
  sqrt2.set_name("sqrt2");
  one.set_name("one");
  half.set_name("half");
  ratio.set_name("ratio");
  ratio.set_float_data(0, 0.1f);
  for (const auto* t : {&sqrt2, &one, &half, &ratio}) add_initializer(m, *t);
  onnx::TensorProto training;
  training.set_name("training");
  training.set_data_type(onnx::TensorProto::BOOL);
  training.add_int32_data(1);
  add_initializer(m, training);
  auto dropout = [&](const std::string& in, const std::string& out) {
    add_node(m, "Dropout", {in, "ratio", "training"}, {out, out + "_mask"});
  };
  auto layernorm = [&](const std::string& in, const std::string& ln, const std::string& out) {
    auto* n = add_node(m, "LayerNormalization", {in, ln + "_g", ln + "_b"}, {out});
    add_int_attr(n, "axis", -1);
  };
  layernorm("x", "ln1", "h1");
  for (const char* t : {"q", "k", "v"}) {
    add_node(m, "MatMul", {"h1", std::string("w_") + t}, {std::string(t) + "0"});
    add_node(m, "Reshape", {std::string(t) + "0", "heads_shape"}, {std::string(t) + "1"});
    auto* tr = add_node(m, "Transpose", {std::string(t) + "1"}, {std::string(t) + "2"});
    add_ints_attr(tr, "perm", std::string(t) == "k" ? std::vector<std::int64_t>{0, 2, 3, 1}
                                                    : std::vector<std::int64_t>{0, 2, 1, 3});
  }
  add_node(m, "MatMul", {"q2", "k2"}, {"scores"});
  add_node(m, "Div", {"scores", "sqrt_d"}, {"scaled"});
  auto* sm = add_node(m, "Softmax", {"scaled"}, {"probs"});
  add_int_attr(sm, "axis", -1);
  dropout("probs", "probs_d");
  add_node(m, "MatMul", {"probs_d", "v2"}, {"ctx"});
  auto* tr = add_node(m, "Transpose", {"ctx"}, {"ctx_t"});
  add_ints_attr(tr, "perm", {0, 2, 1, 3});
  add_node(m, "Reshape", {"ctx_t", "merge_shape"}, {"ctx_m"});
  add_node(m, "MatMul", {"ctx_m", "w_proj"}, {"attn"});
  dropout("attn", "attn_d");
  add_node(m, "Add", {"x", "attn_d"}, {"res1"});
  layernorm("res1", "ln2", "h2");
  add_node(m, "MatMul", {"h2", "w_fc1"}, {"fc1"});
  add_node(m, "Div", {"fc1", "sqrt2"}, {"g1"});
  add_node(m, "Erf", {"g1"}, {"g2"});
  add_node(m, "Add", {"g2", "one"}, {"g3"});
  add_node(m, "Mul", {"fc1", "g3"}, {"g4"});
  add_node(m, "Mul", {"g4", "half"}, {"gelu"});
  add_node(m, "MatMul", {"gelu", "w_fc2"}, {"fc2"});
  dropout("fc2", "fc2_d");
  add_node(m, "Add", {"res1", "fc2_d"}, {"y"});
  add_output(m, "y", {b, s, h});
  if (weights_as_inputs) {
    auto* meta = m.add_metadata_props();
    meta->set_key("symtensor.parameters");
    meta->set_value(params);
  }
  return m;
}

}  // namespace symtensor::testing
