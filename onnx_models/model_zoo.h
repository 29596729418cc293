#pragma once
// The reference model zoo: ONNX graphs (opset 17, IR 8) written the way PyTorch's exporter
// writes them, with symbolic `batch` and `seq` dims.
//
// Weight-free models (Weights::none) keep every parameter as a graph input with its shape
// and list their names, comma-separated, in the metadata property `symtensor.parameters`.
// Models with random weights hold them as initializers. Other metadata: `symtensor.model`,
// `symtensor.family`, `symtensor.config` (describe()), `symtensor.hf.model_type` (models read
// from or preset as a Hugging Face config), and for mixtures of experts
// `symtensor.moe.experts` / `symtensor.moe.top_k` / `symtensor.moe.capacity_factor`
// (experts run on their capacity of routed tokens, see layers.h moe_mlp).
#include <cstdint>
#include <string>

#include <onnx/onnx_pb.h>

#include "onnx_models/model_config.h"
#include "onnx_models/presets.h"

namespace symtensor::models {

inline constexpr const char* kParametersKey = "symtensor.parameters";
inline constexpr int kOpsetVersion = 17;
inline constexpr int kIrVersion = 8;

// Validates the configuration, then writes the graph.
onnx::ModelProto build_model(const ModelConfig& config);

// Elements of all parameters, read from the proto: the inputs named in
// `symtensor.parameters` plus every initializer. Throws if a parameter shape is symbolic.
std::int64_t count_parameters(const onnx::ModelProto& model);

// Writes to "<path>.tmp" then renames; throws naming the path on failure.
void save_model(const onnx::ModelProto& model, const std::string& path);

// Reads a model file; throws naming the path on failure.
onnx::ModelProto load_model(const std::string& path);

}  // namespace symtensor::models
