#include "onnx_models/graph_builder.h"

#include <stdexcept>

namespace symtensor::models {

namespace {

// Random weights are capped so that a full-size model is never filled by mistake.
constexpr std::int64_t kMaxRandomElements = std::int64_t{1} << 26;

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t hash_name(const std::string& name) {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ULL;
  return h;
}

void set_shape(onnx::ValueInfoProto* info, int elem_type, const std::vector<Dim>& dims) {
  auto* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem_type);
  auto* shape = tensor->mutable_shape();
  for (const Dim& d : dims) {
    auto* dim = shape->add_dim();
    if (d.param.empty()) dim->set_dim_value(d.value);
    else dim->set_dim_param(d.param);
  }
}

void set_attr(onnx::NodeProto* node, const Attr& attr) {
  auto* a = node->add_attribute();
  a->set_name(attr.name);
  if (auto* i = std::get_if<std::int64_t>(&attr.value)) {
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(*i);
  } else if (auto* f = std::get_if<float>(&attr.value)) {
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(*f);
  } else if (auto* v = std::get_if<std::vector<std::int64_t>>(&attr.value)) {
    a->set_type(onnx::AttributeProto::INTS);
    for (std::int64_t x : *v) a->add_ints(x);
  } else {
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(std::get<std::string>(attr.value));
  }
}

}  // namespace

GraphBuilder::GraphBuilder(onnx::GraphProto* graph, Weights weights, std::uint64_t seed)
    : graph_(graph), weights_(weights), seed_(seed) {}

std::string GraphBuilder::scope_prefix() const {
  std::string prefix;
  for (const auto& s : scopes_) prefix += "/" + s;
  return prefix;
}

std::string GraphBuilder::module_path(const std::string& leaf) const {
  std::string path;
  for (const auto& s : scopes_) path += s + ".";
  return path + leaf;
}

std::string GraphBuilder::fresh_output(const std::string& op_type) {
  return scope_prefix() + "/" + op_type + "_output_" + std::to_string(counter_++);
}

std::string GraphBuilder::input(const std::string& name, int elem_type, const std::vector<Dim>& dims) {
  set_shape(graph_->add_input(), elem_type, dims);
  graph_->mutable_input(graph_->input_size() - 1)->set_name(name);
  return name;
}

void GraphBuilder::output(const std::string& value, const std::string& name, int elem_type,
                          const std::vector<Dim>& dims) {
  // Graph outputs get their own name through an Identity, as the exporter does.
  auto* node = graph_->add_node();
  node->set_op_type("Identity");
  node->set_name(name + "_Identity");
  node->add_input(value);
  node->add_output(name);
  auto* info = graph_->add_output();
  info->set_name(name);
  set_shape(info, elem_type, dims);
}

std::string GraphBuilder::parameter(const std::string& leaf, const std::vector<std::int64_t>& dims, Init init) {
  const std::string name = module_path(leaf);
  std::int64_t elements = 1;
  for (std::int64_t d : dims) elements *= d;
  parameter_names_.push_back(name);
  parameter_elements_ += elements;
  if (weights_ == Weights::none) {
    std::vector<Dim> shape(dims.begin(), dims.end());
    input(name, onnx::TensorProto::FLOAT, shape);
    return name;
  }
  if (parameter_elements_ > kMaxRandomElements)
    throw std::runtime_error("parameter '" + name + "': random weights are limited to " +
                             std::to_string(kMaxRandomElements) + " elements; use --weights none");
  auto* t = graph_->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (std::int64_t d : dims) t->add_dims(d);
  auto* data = t->mutable_float_data();
  data->Reserve(static_cast<int>(elements));
  std::uint64_t state = seed_ ^ hash_name(name);
  for (std::int64_t i = 0; i < elements; ++i) {
    double u = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;  // [0, 1)
    data->Add(static_cast<float>(init.center + (2.0 * u - 1.0) * init.spread));
  }
  return name;
}

std::vector<std::string> GraphBuilder::op_n(const std::string& op_type, const std::vector<std::string>& inputs,
                                            int outputs, const std::vector<Attr>& attrs) {
  auto* node = graph_->add_node();
  node->set_op_type(op_type);
  node->set_name(scope_prefix() + "/" + op_type + "_" + std::to_string(counter_));
  for (const auto& in : inputs) node->add_input(in);
  std::vector<std::string> names;
  for (int i = 0; i < outputs; ++i) {
    names.push_back(fresh_output(op_type));
    node->add_output(names.back());
  }
  for (const auto& a : attrs) set_attr(node, a);
  return names;
}

std::string GraphBuilder::op(const std::string& op_type, const std::vector<std::string>& inputs,
                             const std::vector<Attr>& attrs) {
  return op_n(op_type, inputs, 1, attrs).front();
}

namespace {

onnx::TensorProto* constant_value(onnx::NodeProto* node) {
  auto* a = node->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  return a->mutable_t();
}

}  // namespace

std::string GraphBuilder::ints(const std::vector<std::int64_t>& values) {
  std::string out = op("Constant", {});
  auto* t = constant_value(graph_->mutable_node(graph_->node_size() - 1));
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<std::int64_t>(values.size()));
  for (std::int64_t v : values) t->add_int64_data(v);
  return out;
}

std::string GraphBuilder::int_scalar(std::int64_t value) {
  std::string out = op("Constant", {});
  auto* t = constant_value(graph_->mutable_node(graph_->node_size() - 1));
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_int64_data(value);
  return out;
}

std::string GraphBuilder::float_scalar(float value) {
  std::string out = op("Constant", {});
  auto* t = constant_value(graph_->mutable_node(graph_->node_size() - 1));
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_float_data(value);
  return out;
}

std::string GraphBuilder::floats(const std::vector<float>& values) {
  std::string out = op("Constant", {});
  auto* t = constant_value(graph_->mutable_node(graph_->node_size() - 1));
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(static_cast<std::int64_t>(values.size()));
  for (float v : values) t->add_float_data(v);
  return out;
}

}  // namespace symtensor::models
