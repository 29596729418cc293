#pragma once
// Shared by the serving tests: a zoo preset's ServingModel, imported once per test process.
#include <map>
#include <string>

#include "onnx_models/model_zoo.h"  // protobuf before GiNaC (CLN's Mutable macro)
#include "compiler/onnx_import/import.h"
#include "compiler/serve/serving_model.h"
#include "onnx_models/presets.h"

namespace symtensor::compiler::testing {

inline const ServingModel& serving_model_of(const std::string& preset) {
  static std::map<std::string, ServingModel> models;
  auto it = models.find(preset);
  if (it == models.end()) {
    ImportOptions io;
    io.bindings = {{"batch", 1.0}, {"seq", 128.0}};
    io.warn_opaque = false;
    Graph graph = import_onnx_model(models::build_model(models::preset_config(preset)), preset, io);
    it = models.emplace(preset, read_serving_model(graph, preset)).first;
  }
  return it->second;
}

}  // namespace symtensor::compiler::testing
