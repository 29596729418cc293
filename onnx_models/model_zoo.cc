#include "onnx_models/model_zoo.h"

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>

#include "onnx_models/families.h"
#include "onnx_models/graph_builder.h"

namespace symtensor::models {

namespace {

void add_metadata(onnx::ModelProto& model, const std::string& key, const std::string& value) {
  auto* entry = model.add_metadata_props();
  entry->set_key(key);
  entry->set_value(value);
}

}  // namespace

onnx::ModelProto build_model(const ModelConfig& config) {
  validate(config);
  onnx::ModelProto model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name("symtensor-models");
  model.set_producer_version("0.1.0");
  model.set_model_version(1);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpsetVersion);
  auto* graph = model.mutable_graph();
  graph->set_name(config.name.empty() ? family_name(config.family) : config.name);
  GraphBuilder g(graph, config.weights, config.seed);
  switch (config.family) {
    case Family::gpt: build_gpt(g, config); break;
    case Family::llama:
      if (config.model_type == "gemma3_text")
        build_gemma3(g, config);
      else
        build_llama(g, config);
      break;
    case Family::bert: build_bert(g, config); break;
    case Family::vit: build_vit(g, config); break;
    case Family::resnet: build_resnet(g, config); break;
  }
  add_metadata(model, "symtensor.model", config.name);
  add_metadata(model, "symtensor.family", family_name(config.family));
  add_metadata(model, "symtensor.config", describe(config));
  if (!config.model_type.empty()) add_metadata(model, "symtensor.hf.model_type", config.model_type);
  if (config.experts > 0) {
    add_metadata(model, "symtensor.moe.experts", std::to_string(config.experts));
    add_metadata(model, "symtensor.moe.top_k", std::to_string(config.top_k));
    std::ostringstream factor;
    factor << config.capacity_factor;
    add_metadata(model, "symtensor.moe.capacity_factor", factor.str());
  }
  if (config.weights == Weights::none) {
    std::string names;
    for (const auto& name : g.parameter_names()) names += (names.empty() ? "" : ",") + name;
    add_metadata(model, kParametersKey, names);
  }
  return model;
}

std::int64_t count_parameters(const onnx::ModelProto& model) {
  std::set<std::string> listed;
  for (const auto& entry : model.metadata_props()) {
    if (entry.key() != kParametersKey) continue;
    std::stringstream names(entry.value());
    for (std::string name; std::getline(names, name, ',');) listed.insert(name);
  }
  std::int64_t total = 0;
  for (const auto& input : model.graph().input()) {
    if (!listed.count(input.name())) continue;
    std::int64_t elements = 1;
    for (const auto& dim : input.type().tensor_type().shape().dim()) {
      if (!dim.has_dim_value()) throw std::runtime_error("parameter '" + input.name() + "' has a symbolic shape");
      elements *= dim.dim_value();
    }
    total += elements;
  }
  for (const auto& tensor : model.graph().initializer()) {
    std::int64_t elements = 1;
    for (std::int64_t d : tensor.dims()) elements *= d;
    total += elements;
  }
  return total;
}

void save_model(const onnx::ModelProto& model, const std::string& path) {
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out || !model.SerializeToOstream(&out) || !out.flush())
      throw std::runtime_error("cannot write model file '" + temp + "'");
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    std::remove(temp.c_str());
    throw std::runtime_error("cannot rename '" + temp + "' to '" + path + "'");
  }
}

onnx::ModelProto load_model(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open model file '" + path + "'");
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in)) throw std::runtime_error("'" + path + "' is not a valid ONNX model");
  return model;
}

}  // namespace symtensor::models
