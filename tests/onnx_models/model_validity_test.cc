// Every preset (full size and tiny) passes ONNX's checker and strict shape inference, and
// follows the weight-free / random-weights conventions.
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include "onnx_models/model_zoo.h"
#include "tests/temp_path.h"

namespace symtensor::models {
namespace {

std::string metadata(const onnx::ModelProto& model, const std::string& key) {
  for (const auto& entry : model.metadata_props())
    if (entry.key() == key) return entry.value();
  return "";
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class EveryPreset : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryPreset, PassesCheckerAndStrictShapeInference) {
  onnx::ModelProto model = build_model(preset_config(GetParam()));
  EXPECT_EQ(model.ir_version(), 8);
  ASSERT_EQ(model.opset_import_size(), 1);
  EXPECT_EQ(model.opset_import(0).version(), 17);
  EXPECT_NO_THROW(onnx::checker::check_model(model));
  EXPECT_NO_THROW(onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                                     onnx::ShapeInferenceOptions(true, 1, false)));
  EXPECT_GT(model.graph().value_info_size(), 0);  // inference did run
}

TEST_P(EveryPreset, DataInputsHaveSymbolicBatch) {
  onnx::ModelProto model = build_model(preset_config(GetParam()));
  std::set<std::string> parameters;
  std::stringstream list(metadata(model, kParametersKey));
  for (std::string name; std::getline(list, name, ',');) parameters.insert(name);
  int data_inputs = 0;
  for (const auto& input : model.graph().input()) {
    if (parameters.count(input.name())) continue;
    ++data_inputs;
    const auto& shape = input.type().tensor_type().shape();
    ASSERT_GT(shape.dim_size(), 0) << input.name();
    EXPECT_EQ(shape.dim(0).dim_param(), "batch") << input.name();
    if (input.type().tensor_type().elem_type() == onnx::TensorProto::INT64) {
      EXPECT_EQ(shape.dim(1).dim_param(), "seq") << input.name();
    }
  }
  EXPECT_GE(data_inputs, 1);
  for (const auto& output : model.graph().output()) EXPECT_EQ(output.type().tensor_type().shape().dim(0).dim_param(), "batch");
}

TEST_P(EveryPreset, WeightsFollowTheModeConvention) {
  const std::string name = GetParam();
  onnx::ModelProto model = build_model(preset_config(name));
  const std::string listed = metadata(model, kParametersKey);
  if (ends_with(name, "-tiny")) {
    EXPECT_TRUE(listed.empty());
    EXPECT_GT(model.graph().initializer_size(), 0);
  } else {
    EXPECT_EQ(model.graph().initializer_size(), 0);
    std::set<std::string> inputs;
    for (const auto& input : model.graph().input()) inputs.insert(input.name());
    std::stringstream list(listed);
    int count = 0;
    for (std::string p; std::getline(list, p, ',');) {
      EXPECT_TRUE(inputs.count(p)) << p;
      ++count;
    }
    EXPECT_GT(count, 0);
    EXPECT_LT(model.ByteSizeLong(), 4u << 20) << "weight-free models must stay small";
  }
  EXPECT_EQ(metadata(model, "symtensor.model"), name);
}

INSTANTIATE_TEST_SUITE_P(Zoo, EveryPreset, ::testing::ValuesIn(preset_names()),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

TEST(ModelZoo, SaveThenLoadRoundTrips) {
  onnx::ModelProto model = build_model(preset_config("gpt2-small-tiny"));
  const std::string path = symtensor::testing::temp_path("gpt2_small_tiny_roundtrip.onnx");
  save_model(model, path);
  onnx::ModelProto loaded = load_model(path);
  EXPECT_EQ(loaded.SerializeAsString(), model.SerializeAsString());
  EXPECT_THROW(load_model(path + ".missing"), std::runtime_error);
}

TEST(ModelZoo, RandomWeightsAreDeterministicPerSeed) {
  ModelConfig config = preset_config("gpt2-small-tiny");
  const std::string a = build_model(config).SerializeAsString();
  EXPECT_EQ(a, build_model(config).SerializeAsString());
  config.seed = 2;
  EXPECT_NE(a, build_model(config).SerializeAsString());
}

TEST(ModelZoo, RefusesRandomWeightsForFullSizeModels) {
  ModelConfig config = preset_config("llama2-7b");
  config.weights = Weights::random;
  EXPECT_THROW(build_model(config), std::runtime_error);
}

}  // namespace
}  // namespace symtensor::models

namespace symtensor::models {
namespace {

TEST(ModelZoo, BundledDefaultModelIsUpToDate) {
  // onnx_models/bundled/gpt-1.7b.onnx is `symtensor models gpt-1.7b -o ...`, committed.
  const onnx::ModelProto bundled = load_model(std::string(SYMTENSOR_SOURCE_ROOT) + "/onnx_models/bundled/gpt-1.7b.onnx");
  EXPECT_EQ(bundled.SerializeAsString(), build_model(preset_config("gpt-1.7b")).SerializeAsString())
      << "regenerate with: symtensor models gpt-1.7b -o onnx_models/bundled/gpt-1.7b.onnx";
}

}  // namespace
}  // namespace symtensor::models
