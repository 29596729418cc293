#pragma once
// A Hugging Face config.json (architecture fields only: no weights, no hub access) read into
// the zoo's ModelConfig, so that `symtensor models --hf-config config.json` writes the
// model as the HF modeling code computes it.
//
// Written: llama (1-3.x, rope_scaling linear/llama3), mistral (sliding_window), mixtral,
// qwen2, qwen3 (q_norm/k_norm, head_dim), qwen3_moe (every layer sparse), gemma3_text
// (local/global layers, GeGLU, four (1 + w) norms a layer, scaled embedding), deepseek_v2 and
// deepseek_v3 (multi-head latent attention, yarn rope, dense first layers, routed and shared
// experts, V3's sigmoid group-limited router; the MTP layer only with --mtp: HF's code leaves it
// out), gpt_oss
// (alternating sliding-window and full layers, attention sinks, biased attention, yarn rope
// with an untruncated correction range, biased router and experts, clamped SwiGLU; the mxfp4
// quantization_config is not an architecture field and is not read), nemotron (Nemotron-4,
// Minitron: LayerNorm1P norms with biases, the squared-ReLU MLP, rotary on the first
// partial_rotary_factor of each head, norm_eps). Every other
// model_type, and any field of a written one that the zoo cannot express (a different
// hidden_act, mlp_bias, yarn rope scaling, mixed dense/sparse layers, ...), is refused in one
// line that names the file, the model_type and the key, never approximated.
#include <string>
#include <vector>

#include "onnx_models/model_config.h"

namespace symtensor::models {

// `text` is the JSON, `source` the name errors give (the file path).
// Throws std::runtime_error: "<source>: <what>" in one line.
ModelConfig config_from_hf_json(const std::string& text, const std::string& source);

// Reads the file, then config_from_hf_json; the model is named after `_name_or_path` when
// the file has one, else after the file (or its folder, for a file named config.json).
ModelConfig load_hf_config(const std::string& path);

// The model_type values that are written (for help texts and refusals).
const std::vector<std::string>& hf_model_types();

}  // namespace symtensor::models
