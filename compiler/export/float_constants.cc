#include "compiler/export/float_constants.h"

#include <cstring>
#include <exception>

#include "compiler/onnx_import/proto_reading.h"

namespace symtensor::compiler {
namespace {

template <typename T>
std::vector<double> raw_as_doubles(const std::string& raw) {
  std::vector<double> out(raw.size() / sizeof(T));
  for (std::size_t i = 0; i < out.size(); ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof v);
    out[i] = static_cast<double>(v);
  }
  return out;
}

}  // namespace

FloatConstants::FloatConstants(const std::string& model_path) {
  try {
    model_ = read_model_file(model_path);
  } catch (const std::exception&) {
    return;
  }
  for (const auto& t : model_.graph().initializer()) by_name_[t.name()] = &t;
  for (const auto& n : model_.graph().node()) {
    if (n.op_type() != "Constant" || n.output_size() != 1) continue;
    for (const auto& a : n.attribute()) {
      if (a.name() == "value" && a.has_t()) by_name_[n.output(0)] = &a.t();
      if (a.name() == "value_float") scalar_attributes_[n.output(0)] = a.f();
    }
  }
}

std::optional<std::vector<double>> FloatConstants::values(const std::string& name, std::size_t limit) const {
  if (const auto s = scalar_attributes_.find(name); s != scalar_attributes_.end()) return std::vector<double>{s->second};
  const auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  const onnx::TensorProto& t = *it->second;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  std::vector<double> v;
  if (t.data_type() == onnx::TensorProto::FLOAT)
    v = t.raw_data().empty() ? std::vector<double>(t.float_data().begin(), t.float_data().end()) : raw_as_doubles<float>(t.raw_data());
  else if (t.data_type() == onnx::TensorProto::DOUBLE)
    v = t.raw_data().empty() ? std::vector<double>(t.double_data().begin(), t.double_data().end()) : raw_as_doubles<double>(t.raw_data());
  else
    return std::nullopt;
  if (v.empty() || v.size() > limit) return std::nullopt;
  return v;
}

}  // namespace symtensor::compiler
