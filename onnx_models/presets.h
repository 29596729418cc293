#pragma once
// Named configurations at published sizes, their "-tiny" forms, and command-line overrides.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "onnx_models/model_config.h"

namespace symtensor::models {

struct Preset {
  std::string name;
  std::string source;  // where the sizes come from
  ModelConfig config;
};

// Full-size presets (weight-free). Every one also exists as "<name>-tiny".
const std::vector<Preset>& presets();

// The same structure (family, grouped-query ratio, biases, experts, top-k) shrunk to a
// model with 2 layers, hidden 64, 4 heads, small vocabulary, and random weights.
ModelConfig tiny_variant(const ModelConfig& config);

// "gpt-1.7b" or "gpt-1.7b-tiny", or a family name ("gpt", "llama-tiny": the family's first
// preset, renamed); throws naming the unknown preset.
ModelConfig preset_config(const std::string& name);

// Every accepted preset name, full sizes first, then the tiny forms.
std::vector<std::string> preset_names();

struct Overrides {
  std::optional<std::int64_t> layers = std::nullopt;
  std::optional<std::int64_t> hidden = std::nullopt;
  std::optional<std::int64_t> heads = std::nullopt;
  std::optional<std::int64_t> kv_heads = std::nullopt;
  std::optional<std::int64_t> intermediate = std::nullopt;
  std::optional<std::int64_t> vocab = std::nullopt;
  std::optional<std::int64_t> seq = std::nullopt;
  std::optional<std::int64_t> experts = std::nullopt;
  std::optional<std::int64_t> top_k = std::nullopt;
  std::optional<double> capacity_factor = std::nullopt;
  std::optional<std::int64_t> image_size = std::nullopt;
  std::optional<std::int64_t> patch_size = std::nullopt;
  std::optional<std::int64_t> classes = std::nullopt;
  std::optional<std::int64_t> image_tiles = std::nullopt;  // a vision tower's tiles per image (LLaVA)
  std::optional<std::int64_t> mtp_layers = std::nullopt;   // multi-token prediction depths (llama family)
  std::optional<Weights> weights = std::nullopt;
  std::optional<std::uint64_t> seed = std::nullopt;
};

// Changed fields replace the preset's. For gpt/bert/vit the MLP stays 4*hidden unless
// --intermediate is given; a multi-head model stays multi-head when only --heads changes.
// Validates the result.
ModelConfig apply_overrides(ModelConfig config, const Overrides& overrides);

// One line: "gpt, 24 layers, hidden 2304, 24 heads, vocab 51200, seq 2048".
std::string describe(const ModelConfig& config);

}  // namespace symtensor::models
