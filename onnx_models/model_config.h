#pragma once
// The knobs of every reference model family. A preset fills them with published sizes;
// command-line overrides change single fields; validate() rejects inconsistent sets.
#include <cstdint>
#include <string>

namespace symtensor::models {

enum class Family { gpt, llama, bert, vit, resnet };

// none: weights are graph inputs with shapes only (listed in `symtensor.parameters`);
// random: deterministic random initializers, for numerical tests of small models.
enum class Weights { none, random };

struct ModelConfig {
  std::string name;
  Family family = Family::gpt;
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;        // < heads: grouped-query attention (llama family)
  std::int64_t intermediate = 0;    // MLP width (4*hidden for gpt/bert/vit)
  std::int64_t vocab = 0;
  std::int64_t seq = 0;             // maximum positions (learned tables, rotary range)
  std::int64_t type_vocab = 0;      // bert token types
  std::int64_t experts = 0;         // > 0: mixture of experts (llama family)
  std::int64_t top_k = 0;
  double capacity_factor = 1.0;     // expert capacity = ceil(factor * top_k * seq / experts) tokens
  bool qkv_bias = false;            // llama family: Qwen2 has biases on q/k/v
  std::int64_t image_size = 0;      // vit, resnet
  std::int64_t patch_size = 0;      // vit
  std::int64_t classes = 0;         // vit, resnet
  std::int64_t resnet_width = 64;   // channels of the stem; stages use 1x, 2x, 4x, 8x
  std::int64_t resnet_blocks[4] = {3, 4, 6, 3};
  double norm_epsilon = 1e-5;
  double rope_theta = 10000.0;
  Weights weights = Weights::none;
  std::uint64_t seed = 1;
};

const char* family_name(Family family);
const char* weights_name(Weights weights);
Weights parse_weights(const std::string& text);  // "none" | "random"

// Throws std::runtime_error naming the model and the first inconsistent field.
void validate(const ModelConfig& config);

}  // namespace symtensor::models
