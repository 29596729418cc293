#pragma once
// One graph writer per family; each adds inputs, parameters, nodes and outputs.
#include "onnx_models/graph_builder.h"
#include "onnx_models/model_config.h"

namespace symtensor::models {

void build_gpt(GraphBuilder& g, const ModelConfig& c);
void build_llama(GraphBuilder& g, const ModelConfig& c);  // LLaMA-2, Qwen2 (qkv_bias), Mixtral (experts)
void build_gemma3(GraphBuilder& g, const ModelConfig& c);  // llama family, model_type gemma3_text
void build_bert(GraphBuilder& g, const ModelConfig& c);
void build_vit(GraphBuilder& g, const ModelConfig& c);
void build_resnet(GraphBuilder& g, const ModelConfig& c);

// LLaVA: the decoder's token embeddings [batch, seq, hidden] with the first image_tokens(c)
// positions replaced by the projected image features (adds the pixel_values input).
std::string with_image_features(GraphBuilder& g, const std::string& embeddings, const ModelConfig& c);

}  // namespace symtensor::models
