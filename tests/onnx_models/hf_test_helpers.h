#pragma once
// Helpers of the `models --hf-config` tests (hf_*_test.cc): scratch config files, the one-line
// error a call throws, ONNX's checks, and a tiny model imported at batch 2, seq 8.
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include "onnx_models/hf_config.h"  // protobuf before GiNaC (CLN's Mutable macro)
#include "compiler/onnx_import/import.h"
#include "tests/temp_path.h"

namespace symtensor::models::hf_testing {

inline std::string write_json(const std::string& file, const std::string& json) {
  const std::string path = symtensor::testing::temp_path(file);
  std::ofstream(path) << json;
  return path;
}

inline std::string hf_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

// ONNX's checker and strict shape inference pass.
inline void expect_valid_onnx(onnx::ModelProto& model) {
  EXPECT_NO_THROW(onnx::checker::check_model(model));
  EXPECT_NO_THROW(onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                                     onnx::ShapeInferenceOptions(true, 1, false)));
}

// Imported at batch 2, seq 8.
inline compiler::Graph import_tiny(const onnx::ModelProto& model, const std::string& name) {
  compiler::ImportOptions options;
  options.bindings = {{"batch", 2.0}, {"seq", 8.0}};
  options.warn_opaque = false;
  return compiler::import_onnx_model(model, name, options);
}

}  // namespace symtensor::models::hf_testing
