#pragma once
// Hand-built ONNX models for importer tests: a few lines per graph.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <onnx/onnx_pb.h>

namespace symtensor::testing {

using DimSpec = std::variant<std::int64_t, std::string>;  // number or dim_param ("" = unnamed)

inline onnx::ModelProto make_model(int opset = 17, int ir_version = 8) {
  onnx::ModelProto m;
  m.set_ir_version(ir_version);
  m.set_producer_name("symtensor-tests");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  m.mutable_graph()->set_name("test");
  return m;
}

inline void set_type(onnx::ValueInfoProto* vi, int elem, const std::vector<DimSpec>& dims) {
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (const auto* v = std::get_if<std::int64_t>(&d)) dim->set_dim_value(*v);
    else if (!std::get<std::string>(d).empty()) dim->set_dim_param(std::get<std::string>(d));
  }
}

inline void add_input(onnx::ModelProto& m, const std::string& name, const std::vector<DimSpec>& dims,
                      int elem = onnx::TensorProto::FLOAT) {
  auto* vi = m.mutable_graph()->add_input();
  vi->set_name(name);
  set_type(vi, elem, dims);
}

inline void add_output(onnx::ModelProto& m, const std::string& name, const std::vector<DimSpec>& dims,
                       int elem = onnx::TensorProto::FLOAT) {
  auto* vi = m.mutable_graph()->add_output();
  vi->set_name(name);
  set_type(vi, elem, dims);
}

inline onnx::NodeProto* add_node(onnx::ModelProto& m, const std::string& op, const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs, const std::string& name = "") {
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name.empty() ? op + "_" + outputs.at(0) : name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

inline void add_int_attr(onnx::NodeProto* n, const std::string& name, std::int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

inline void add_ints_attr(onnx::NodeProto* n, const std::string& name, const std::vector<std::int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}

inline onnx::TensorProto float_tensor(const std::string& name, const std::vector<std::int64_t>& dims) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  std::int64_t n = 1;
  for (auto d : dims) {
    t.add_dims(d);
    n *= d;
  }
  for (std::int64_t i = 0; i < n; ++i) t.add_float_data(0.01f * static_cast<float>(i % 7));
  return t;
}

inline onnx::TensorProto int64_tensor(const std::string& name, const std::vector<std::int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(static_cast<std::int64_t>(values.size()));
  for (auto v : values) t.add_int64_data(v);
  return t;
}

inline void add_initializer(onnx::ModelProto& m, const onnx::TensorProto& t) { *m.mutable_graph()->add_initializer() = t; }

// A Constant node holding `t`, whose output is t.name().
inline void add_constant(onnx::ModelProto& m, const onnx::TensorProto& t) {
  auto* n = add_node(m, "Constant", {}, {t.name()});
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = t;
  a->mutable_t()->clear_name();
}

// The model with the symbolic dim `from` renamed `to` in its inputs, outputs and value
// infos: another exporter's naming of the same model.
inline onnx::ModelProto with_dim_renamed(onnx::ModelProto m, const std::string& from, const std::string& to) {
  for (auto* values : {m.mutable_graph()->mutable_input(), m.mutable_graph()->mutable_output(),
                       m.mutable_graph()->mutable_value_info()})
    for (auto& v : *values)
      for (auto& d : *v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim())
        if (d.dim_param() == from) d.set_dim_param(to);
  return m;
}

}  // namespace symtensor::testing
