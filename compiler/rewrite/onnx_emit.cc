#include "compiler/rewrite/onnx_emit.h"

#include <cstdio>
#include <stdexcept>

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include "compiler/rewrite/tensor_data.h"

namespace symtensor::compiler {

onnx::ValueInfoProto tensor_value_info(const std::string& name, int elem_type, const std::vector<std::int64_t>& shape) {
  onnx::ValueInfoProto vi;
  vi.set_name(name);
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem_type);
  auto* s = tt->mutable_shape();
  for (auto d : shape) s->add_dim()->set_dim_value(d);
  return vi;
}

onnx::ModelProto model_skeleton(const onnx::ModelProto& original, const std::string& name) {
  onnx::ModelProto m;
  m.set_ir_version(std::min<std::int64_t>(original.ir_version(), 8));
  m.set_producer_name("symtensor");
  m.set_producer_version("0.1.0");
  for (const auto& o : original.opset_import()) *m.add_opset_import() = o;
  m.mutable_graph()->set_name(name);
  return m;
}

void add_opset(onnx::ModelProto& model, const std::string& domain, std::int64_t version) {
  for (const auto& o : model.opset_import())
    if (o.domain() == domain) return;
  auto* o = model.add_opset_import();
  o->set_domain(domain);
  o->set_version(version);
}

void check_model_strict(const onnx::ModelProto& model, const std::string& label) {
  try {
    onnx::checker::check_model(model);
    onnx::ModelProto copy = model;
    onnx::shape_inference::InferShapes(copy, onnx::OpSchemaRegistry::Instance(), onnx::ShapeInferenceOptions(true, 1, false));
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
    throw std::runtime_error(label + ": " + what);
  }
}

std::string Int64Constants::get(const std::vector<std::int64_t>& values) {
  auto it = names_.find(values);
  if (it != names_.end()) return it->second;
  const std::string name = prefix_ + std::to_string(names_.size());
  *graph_.add_initializer() = int64_tensor(name, values);
  names_[values] = name;
  return name;
}

}  // namespace symtensor::compiler
