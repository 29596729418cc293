#include "onnx_models/presets.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "onnx_models/hf_config.h"

namespace symtensor::models {

namespace {

constexpr const char* kTinySuffix = "-tiny";

ModelConfig gpt(const std::string& name, int64_t layers, int64_t hidden, int64_t heads, int64_t vocab,
                int64_t seq) {
  ModelConfig c;
  c.name = name, c.family = Family::gpt;
  c.layers = layers, c.hidden = hidden, c.heads = heads, c.kv_heads = heads;
  c.intermediate = 4 * hidden, c.vocab = vocab, c.seq = seq;
  return c;
}

ModelConfig llama(const std::string& name, int64_t layers, int64_t hidden, int64_t heads, int64_t kv_heads,
                  int64_t intermediate, int64_t vocab, int64_t seq) {
  ModelConfig c;
  c.name = name, c.family = Family::llama;
  c.layers = layers, c.hidden = hidden, c.heads = heads, c.kv_heads = kv_heads;
  c.intermediate = intermediate, c.vocab = vocab, c.seq = seq;
  return c;
}

ModelConfig qwen2(const std::string& name, int64_t layers, int64_t hidden, int64_t heads, int64_t kv_heads,
                  int64_t intermediate) {
  ModelConfig c = llama(name, layers, hidden, heads, kv_heads, intermediate, 152064, 32768);
  c.qkv_bias = true, c.norm_epsilon = 1e-6, c.rope_theta = 1e6;
  return c;
}

ModelConfig encoder(const std::string& name, Family family) {
  ModelConfig c;
  c.name = name, c.family = family;
  c.layers = 24, c.hidden = 1024, c.heads = 16, c.kv_heads = 16, c.intermediate = 4096;
  c.norm_epsilon = 1e-12;
  return c;
}

// Today's decoders, each from the architecture fields of its published Hugging Face
// config.json (copied from the model repository named in the source), read by the same
// code as `models --hf-config`.
struct HfPreset {
  std::string name, repository, config;  // config: the fields of the repository's config.json
  std::string source = "";               // where no repository holds the config: what it is written from
};

constexpr const char* kLlama3 =
    R"("model_type": "llama", "hidden_act": "silu", "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
       "vocab_size": 128256, "num_key_value_heads": 8, "attention_bias": false, "mlp_bias": false)";
constexpr const char* kLlama31Rope =
    R"("max_position_embeddings": 131072, "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0,
       "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"})";
constexpr const char* kLlama32Rope =
    R"("max_position_embeddings": 131072, "tie_word_embeddings": true, "rope_scaling": {"factor": 32.0,
       "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"})";
constexpr const char* kQwen3 =
    R"("hidden_act": "silu", "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 40960,
       "rms_norm_eps": 1e-06, "rope_theta": 1000000, "rope_scaling": null, "attention_bias": false,
       "tie_word_embeddings": false, "use_sliding_window": false)";

// gpt-oss-120b and gpt-oss-20b share every field but the layers and the experts (layer_types
// is GptOssConfig's default: sliding, full, sliding, ...).
constexpr const char* kGptOss =
    R"("model_type": "gpt_oss", "attention_bias": true, "experts_per_token": 4, "head_dim": 64,
       "hidden_act": "silu", "hidden_size": 2880, "initial_context_length": 4096, "intermediate_size": 2880,
       "max_position_embeddings": 131072, "num_attention_heads": 64, "num_experts_per_tok": 4,
       "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
       "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                        "original_max_position_embeddings": 4096, "rope_type": "yarn", "truncate": false},
       "rope_theta": 150000, "sliding_window": 128, "swiglu_limit": 7.0, "tie_word_embeddings": false,
       "vocab_size": 201088)";

std::vector<HfPreset> hf_presets() {
  const std::string llama3 = kLlama3, l31 = kLlama31Rope, l32 = kLlama32Rope, qwen3 = kQwen3, gpt_oss = kGptOss;
  return {
      {"llama3-8b", "meta-llama/Meta-Llama-3-8B",
       llama3 + R"(, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                 "num_attention_heads": 32, "max_position_embeddings": 8192, "tie_word_embeddings": false)"},
      {"llama3-70b", "meta-llama/Meta-Llama-3-70B",
       llama3 + R"(, "hidden_size": 8192, "intermediate_size": 28672, "num_hidden_layers": 80,
                 "num_attention_heads": 64, "max_position_embeddings": 8192, "tie_word_embeddings": false)"},
      {"llama3.1-8b", "meta-llama/Llama-3.1-8B",
       llama3 + ", " + l31 + R"(, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                 "num_attention_heads": 32, "tie_word_embeddings": false)"},
      {"llama3.1-70b", "meta-llama/Llama-3.1-70B",
       llama3 + ", " + l31 + R"(, "hidden_size": 8192, "intermediate_size": 28672, "num_hidden_layers": 80,
                 "num_attention_heads": 64, "tie_word_embeddings": false)"},
      {"llama3.1-405b", "meta-llama/Llama-3.1-405B",
       llama3 + ", " + l31 + R"(, "hidden_size": 16384, "intermediate_size": 53248, "num_hidden_layers": 126,
                 "num_attention_heads": 128, "tie_word_embeddings": false)"},
      {"llama3.2-1b", "meta-llama/Llama-3.2-1B",
       llama3 + ", " + l32 + R"(, "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
                 "num_attention_heads": 32, "head_dim": 64)"},
      {"llama3.2-3b", "meta-llama/Llama-3.2-3B",
       llama3 + ", " + l32 + R"(, "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 28,
                 "num_attention_heads": 24, "head_dim": 128)"},
      {"mistral-7b", "mistralai/Mistral-7B-v0.1",
       R"("model_type": "mistral", "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 14336,
         "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
         "max_position_embeddings": 32768, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096,
         "tie_word_embeddings": false)"},
      {"mixtral-8x22b", "mistralai/Mixtral-8x22B-v0.1",
       R"("model_type": "mixtral", "hidden_act": "silu", "hidden_size": 6144, "intermediate_size": 16384,
         "num_hidden_layers": 56, "num_attention_heads": 48, "num_key_value_heads": 8, "vocab_size": 32768,
         "max_position_embeddings": 65536, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": null,
         "num_local_experts": 8, "num_experts_per_tok": 2, "tie_word_embeddings": false)"},
      {"qwen2.5-7b", "Qwen/Qwen2.5-7B",
       R"("model_type": "qwen2", "hidden_act": "silu", "hidden_size": 3584, "intermediate_size": 18944,
         "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064,
         "max_position_embeddings": 131072, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
         "sliding_window": 131072, "use_sliding_window": false, "max_window_layers": 28, "tie_word_embeddings": false)"},
      {"qwen2.5-72b", "Qwen/Qwen2.5-72B",
       R"("model_type": "qwen2", "hidden_act": "silu", "hidden_size": 8192, "intermediate_size": 29568,
         "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8, "vocab_size": 152064,
         "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
         "sliding_window": 131072, "use_sliding_window": false, "max_window_layers": 80, "tie_word_embeddings": false)"},
      {"qwen3-8b", "Qwen/Qwen3-8B",
       R"("model_type": "qwen3", )" + qwen3 + R"(, "hidden_size": 4096, "intermediate_size": 12288,
         "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8)"},
      {"qwen3-32b", "Qwen/Qwen3-32B",
       R"("model_type": "qwen3", )" + qwen3 + R"(, "hidden_size": 5120, "intermediate_size": 25600,
         "num_hidden_layers": 64, "num_attention_heads": 64, "num_key_value_heads": 8)"},
      {"qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B",
       R"("model_type": "qwen3_moe", )" + qwen3 + R"(, "hidden_size": 2048, "intermediate_size": 6144,
         "moe_intermediate_size": 768, "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
         "num_experts": 128, "num_experts_per_tok": 8, "norm_topk_prob": true, "decoder_sparse_step": 1,
         "mlp_only_layers": [])"},
      {"qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B",
       R"("model_type": "qwen3_moe", )" + qwen3 + R"(, "hidden_size": 4096, "intermediate_size": 12288,
         "moe_intermediate_size": 1536, "num_hidden_layers": 94, "num_attention_heads": 64, "num_key_value_heads": 4,
         "num_experts": 128, "num_experts_per_tok": 8, "norm_topk_prob": true, "decoder_sparse_step": 1,
         "mlp_only_layers": [])"},
      {"deepseek-v3", "deepseek-ai/DeepSeek-V3",
       R"("model_type": "deepseek_v3", "attention_bias": false, "first_k_dense_replace": 3, "hidden_act": "silu",
         "hidden_size": 7168, "intermediate_size": 18432, "kv_lora_rank": 512, "max_position_embeddings": 163840,
         "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_group": 8, "n_routed_experts": 256,
         "n_shared_experts": 1, "norm_topk_prob": true, "num_attention_heads": 128, "num_experts_per_tok": 8,
         "num_hidden_layers": 61, "num_key_value_heads": 128, "num_nextn_predict_layers": 1, "q_lora_rank": 1536,
         "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06,
         "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0, "mscale_all_dim": 1.0,
                          "original_max_position_embeddings": 4096, "type": "yarn"},
         "rope_theta": 10000, "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "tie_word_embeddings": false,
         "topk_group": 4, "topk_method": "noaux_tc", "v_head_dim": 128, "vocab_size": 129280)"},
      {"deepseek-v2-lite", "deepseek-ai/DeepSeek-V2-Lite",
       R"("model_type": "deepseek_v2", "attention_bias": false, "first_k_dense_replace": 1, "hidden_act": "silu",
         "hidden_size": 2048, "intermediate_size": 10944, "kv_lora_rank": 512, "max_position_embeddings": 163840,
         "moe_intermediate_size": 1408, "moe_layer_freq": 1, "n_group": 1, "n_routed_experts": 64,
         "n_shared_experts": 2, "norm_topk_prob": false, "num_attention_heads": 16, "num_experts_per_tok": 6,
         "num_hidden_layers": 27, "num_key_value_heads": 16, "q_lora_rank": null, "qk_nope_head_dim": 128,
         "qk_rope_head_dim": 64, "rms_norm_eps": 1e-06,
         "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707, "mscale_all_dim": 0.707,
                          "original_max_position_embeddings": 4096, "type": "yarn"},
         "rope_theta": 10000, "routed_scaling_factor": 1.0, "scoring_func": "softmax", "tie_word_embeddings": false,
         "topk_group": 1, "topk_method": "greedy", "v_head_dim": 128, "vocab_size": 102400)"},
      {"gpt-oss-120b", "openai/gpt-oss-120b", gpt_oss + R"(, "num_hidden_layers": 36, "num_local_experts": 128)"},
      {"gpt-oss-20b", "openai/gpt-oss-20b", gpt_oss + R"(, "num_hidden_layers": 24, "num_local_experts": 32)"},
      // Nemotron-4 15B has no published config.json: the technical report's Table 1 (Parmar et
      // al. 2024) written as one; MLP 4h, as transformers' NemotronConfig defaults (its
      // "nemotron-15b style" configuration).
      {"nemotron-4-15b", "",
       R"("model_type": "nemotron", "hidden_act": "relu2", "hidden_size": 6144, "intermediate_size": 24576,
         "num_hidden_layers": 32, "num_attention_heads": 48, "num_key_value_heads": 8, "vocab_size": 256000,
         "max_position_embeddings": 4096, "norm_eps": 1e-05, "partial_rotary_factor": 0.5, "rope_theta": 10000,
         "attention_bias": false, "mlp_bias": false, "tie_word_embeddings": false)",
       "Nemotron-4 15B technical report (arXiv 2402.16819) Table 1, with transformers' NemotronConfig defaults"},
      // nvidia/Nemotron-4-340B-Base is a NeMo checkpoint; its Hugging Face conversion's
      // config.json (rope_percent is not read by NemotronForCausalLM: partial_rotary_factor's
      // default 0.5, the NeMo model's rotary_percentage).
      {"nemotron-4-340b", "mgoin/Nemotron-4-340B-Base-hf",
       R"("model_type": "nemotron", "attention_bias": false, "head_dim": 192, "hidden_act": "relu2",
         "hidden_size": 18432, "intermediate_size": 73728, "max_position_embeddings": 4096, "mlp_bias": false,
         "norm_eps": 1e-05, "num_attention_heads": 96, "num_hidden_layers": 96, "num_key_value_heads": 8,
         "rope_percent": 0.5, "rope_scaling": null, "rope_theta": 10000, "tie_word_embeddings": false,
         "vocab_size": 256000)"},
      {"gemma3-1b", "google/gemma-3-1b-pt",
       R"("model_type": "gemma3_text", "attention_bias": false, "attn_logit_softcapping": null,
         "final_logit_softcapping": null, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
         "hidden_size": 1152, "intermediate_size": 6912, "max_position_embeddings": 32768, "num_attention_heads": 4,
         "num_hidden_layers": 26, "num_key_value_heads": 1, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06,
         "rope_local_base_freq": 10000, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": 512,
         "sliding_window_pattern": 6, "vocab_size": 262144)"},
  };
}

std::vector<Preset> make_presets() {
  const char* megatron = "Megatron-LM SC'21 Table 1 (V=51200, s=2048)";
  std::vector<Preset> p = {
      {"gpt-1.7b", megatron, gpt("gpt-1.7b", 24, 2304, 24, 51200, 2048)},
      {"gpt-3.6b", megatron, gpt("gpt-3.6b", 30, 3072, 32, 51200, 2048)},
      {"gpt-7.5b", megatron, gpt("gpt-7.5b", 36, 4096, 32, 51200, 2048)},
      {"gpt-18.4b", megatron, gpt("gpt-18.4b", 40, 6144, 48, 51200, 2048)},
      {"gpt-39.1b", megatron, gpt("gpt-39.1b", 48, 8192, 64, 51200, 2048)},
      {"gpt-76.1b", megatron, gpt("gpt-76.1b", 60, 10240, 80, 51200, 2048)},
      {"gpt-145.6b", megatron, gpt("gpt-145.6b", 80, 12288, 96, 51200, 2048)},
      {"gpt-310.1b", megatron, gpt("gpt-310.1b", 96, 16384, 128, 51200, 2048)},
      {"gpt-529.6b", megatron, gpt("gpt-529.6b", 105, 20480, 128, 51200, 2048)},
      {"gpt-1t", megatron, gpt("gpt-1t", 128, 25600, 160, 51200, 2048)},
      {"gpt3-175b", "GPT-3 (Brown et al. 2020), GPT-2 BPE vocabulary 50257",
       gpt("gpt3-175b", 96, 12288, 96, 50257, 2048)},
      {"gpt2-small", "GPT-2 small (124M)", gpt("gpt2-small", 12, 768, 12, 50257, 1024)},
      {"llama2-7b", "LLaMA-2 7B", llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096)},
      {"llama2-13b", "LLaMA-2 13B", llama("llama2-13b", 40, 5120, 40, 40, 13824, 32000, 4096)},
      {"llama2-70b", "LLaMA-2 70B (GQA, 8 KV heads)", llama("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096)},
      {"qwen2-7b", "Qwen2 7B", qwen2("qwen2-7b", 28, 3584, 28, 4, 18944)},
      {"qwen2-72b", "Qwen2 72B", qwen2("qwen2-72b", 80, 8192, 64, 8, 29568)},
  };
  ModelConfig mixtral = llama("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 32768);
  mixtral.experts = 8, mixtral.top_k = 2, mixtral.rope_theta = 1e6;
  p.push_back({"mixtral-8x7b", "Mixtral 8x7B (top-2 of 8 experts)", mixtral});
  // llava-hf/llava-1.5-7b-hf config.json: Vicuna-7B v1.5 (LLaMA-2 7B) with the image token and
  // padding (vocabulary 32064); CLIP ViT-L/14 at 336 px (24 layers of 1024, 16 heads, MLP 4096,
  // vision_feature_layer -2: 23 written), a 2-layer GELU projector; 576 image tokens a tile.
  ModelConfig llava = llama("llava-1.5-7b", 32, 4096, 32, 32, 11008, 32064, 4096);
  llava.model_type = "llava";
  llava.vision = {23, 1024, 16, 4096, 336, 14, 1, 1e-5};
  p.push_back({"llava-1.5-7b", "LLaVA-1.5 7B (llava-hf/llava-1.5-7b-hf; --image-tiles N for any-resolution tiling)", llava});
  ModelConfig bert = encoder("bert-large", Family::bert);
  bert.vocab = 30522, bert.seq = 512, bert.type_vocab = 2;
  p.push_back({"bert-large", "BERT-large, uncased (335M)", bert});
  ModelConfig vit = encoder("vit-l16", Family::vit);
  vit.image_size = 224, vit.patch_size = 16, vit.classes = 1000;
  p.push_back({"vit-l16", "ViT-L/16, 224x224 (304M)", vit});
  ModelConfig resnet;
  resnet.name = "resnet50", resnet.family = Family::resnet;
  resnet.image_size = 224, resnet.classes = 1000;
  p.push_back({"resnet50", "ResNet-50, torchvision (25.6M)", resnet});
  for (const HfPreset& hf : hf_presets()) {
    const std::string source = hf.source.empty() ? hf.repository + " config.json (Hugging Face)" : hf.source;
    ModelConfig c = config_from_hf_json("{" + hf.config + "}", source);
    c.name = hf.name;
    p.push_back({hf.name, source, c});
  }
  return p;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = make_presets();
  return all;
}

ModelConfig tiny_variant(const ModelConfig& full) {
  ModelConfig c = full;
  c.name = full.name + kTinySuffix;
  c.weights = Weights::random;
  if (full.family == Family::resnet) {
    c.resnet_width = 8;
    std::fill(std::begin(c.resnet_blocks), std::end(c.resnet_blocks), 1);
    c.image_size = 64, c.classes = 10;
    return c;
  }
  c.layers = 2, c.hidden = 64, c.heads = 4;
  c.kv_heads = full.kv_heads == full.heads ? 4 : 2;
  c.intermediate = full.family == Family::llama ? 96 : 256;
  c.vocab = 128, c.seq = 64;
  if (full.experts > 0) c.experts = std::min<int64_t>(full.experts, 4), c.top_k = std::min<int64_t>(full.top_k, 2);
  if (full.head_dim > 0) c.head_dim = 32;  // heads x head_dim != hidden stays so (Qwen3)
  if (full.sliding_window > 0) c.sliding_window = 4;  // visible at seq 8
  if (full.global_every > 0) c.global_every = 2;     // a local and a global layer
  if (full.rope_scaling.type == "llama3" || full.rope_scaling.type == "yarn") c.rope_scaling.original_max_positions = 64;
  if (full.kv_lora_rank > 0) {  // latent attention: heads of 16 + 8 (q, k) and 16 (v)
    c.kv_heads = c.heads;
    if (full.q_lora_rank > 0) c.q_lora_rank = 32;
    c.kv_lora_rank = 16, c.qk_nope_head_dim = 16, c.qk_rope_head_dim = 8, c.v_head_dim = 16;
  }
  if (full.first_dense_layers > 0) c.first_dense_layers = 1, c.dense_intermediate = 96;  // a dense and a sparse layer
  if (full.experts > 0 && full.first_dense_layers > 0) c.intermediate = 32;   // DeepSeek's fine-grained experts
  if (full.expert_groups > 1) c.expert_groups = 2, c.top_groups = 1;  // the top-2 from one group of 2
  if (full.family == Family::vit) c.image_size = 32, c.patch_size = 8, c.classes = 10;
  if (full.vision.layers > 0) c.vision = {2, 32, 2, 64, 16, 8, full.vision.tiles, full.vision.norm_epsilon};  // 4 image tokens
  return c;
}

ModelConfig preset_config(const std::string& name) {
  const bool tiny = ends_with(name, kTinySuffix);
  const std::string base = tiny ? name.substr(0, name.size() - std::string(kTinySuffix).size()) : name;
  for (const Preset& p : presets())
    if (p.name == base) return tiny ? tiny_variant(p.config) : p.config;
  // A family name stands for the family's first preset, renamed (`models gpt --layers 8`).
  for (const Preset& p : presets())
    if (base == family_name(p.config.family)) {
      ModelConfig c = p.config;
      c.name = base;
      return tiny ? tiny_variant(c) : c;
    }
  throw std::runtime_error("unknown model '" + name + "' (see `symtensor models list`)");
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const Preset& p : presets()) names.push_back(p.name);
  for (const Preset& p : presets()) names.push_back(p.name + kTinySuffix);
  return names;
}

ModelConfig apply_overrides(ModelConfig c, const Overrides& o) {
  const bool multi_head = c.kv_heads == c.heads;
  const bool square_mlp = c.family != Family::llama && c.intermediate == 4 * c.hidden;
  if (o.layers) c.layers = *o.layers;
  if (o.hidden) c.hidden = *o.hidden;
  if (o.heads) c.heads = *o.heads;
  if (o.kv_heads) c.kv_heads = *o.kv_heads;
  else if (multi_head) c.kv_heads = c.heads;
  if (o.intermediate) c.intermediate = *o.intermediate;
  else if (square_mlp) c.intermediate = 4 * c.hidden;
  if (o.vocab) c.vocab = *o.vocab;
  if (o.seq) c.seq = *o.seq;
  if (o.experts) c.experts = *o.experts;
  if (o.top_k) c.top_k = *o.top_k;
  if (o.capacity_factor) c.capacity_factor = *o.capacity_factor;
  if (o.image_size) c.image_size = *o.image_size;
  if (o.patch_size) c.patch_size = *o.patch_size;
  if (o.classes) c.classes = *o.classes;
  if (o.image_tiles) {
    if (c.vision.layers == 0) throw std::runtime_error("model '" + c.name + "': --image-tiles applies to a model with a vision tower (llava-1.5-7b)");
    c.vision.tiles = *o.image_tiles;
  }
  if (o.mtp_layers) {
    if (c.family != Family::llama)
      throw std::runtime_error("model '" + c.name + "': --mtp applies to the llama family (decoder-only language models)");
    c.mtp_layers = *o.mtp_layers;
  }
  if (o.weights) c.weights = *o.weights;
  if (o.seed) c.seed = *o.seed;
  if (c.family != Family::llama && (o.kv_heads || o.experts || o.top_k || o.capacity_factor))
    throw std::runtime_error("model '" + c.name +
                             "': --kv-heads, --experts, --top-k and --capacity-factor apply to the llama family only");
  if (c.family != Family::vit && (o.patch_size || (o.image_size && c.family != Family::resnet)))
    throw std::runtime_error("model '" + c.name + "': --image-size and --patch-size apply to vit (and resnet) only");
  validate(c);
  return c;
}

std::string describe(const ModelConfig& c) {
  std::ostringstream s;
  s << (c.model_type.empty() ? std::string(family_name(c.family)) : c.model_type);
  if (c.family == Family::resnet) {
    s << ", blocks " << c.resnet_blocks[0] << "-" << c.resnet_blocks[1] << "-" << c.resnet_blocks[2] << "-"
      << c.resnet_blocks[3] << ", width " << c.resnet_width << ", image " << c.image_size << ", classes "
      << c.classes;
  } else {
    s << ", " << c.layers << " layers, hidden " << c.hidden << ", " << c.heads << " heads";
    if (c.kv_lora_rank > 0) {
      s << " of " << c.qk_nope_head_dim << "+" << c.qk_rope_head_dim << " (v " << c.v_head_dim << "), latent attention (";
      if (c.q_lora_rank > 0) s << "q rank " << c.q_lora_rank << ", ";
      s << "kv rank " << c.kv_lora_rank << ")";
    }
    if (c.kv_heads != c.heads) s << " (" << c.kv_heads << " kv)";
    if (c.head_dim > 0) s << " of " << c.head_dim;
    if (c.qk_norm) s << ", q/k norm";
    if (c.qkv_bias) s << (c.out_bias ? ", q/k/v/o bias" : ", q/k/v bias");
    if (c.sliding_window > 0) s << ", sliding window " << c.sliding_window;
    if (c.global_every > 0) s << " (global every " << c.global_every << ")";
    if (c.attention_sinks) s << ", attention sinks";
    if (c.partial_rotary != 1.0) s << ", rotary on " << c.partial_rotary << " of each head";
    if (c.layer_norm_1p) s << ", LayerNorm1P";
    if (c.first_dense_layers > 0)
      s << ", " << c.first_dense_layers << " dense layer" << (c.first_dense_layers > 1 ? "s" : "") << " of mlp "
        << c.dense_intermediate << ", then";
    s << ", mlp " << c.intermediate;
    if (c.layer_norm_1p) s << " squared-ReLU" << (c.mlp_bias ? " (biased)" : "");
    if (c.experts > 0) {
      s << " x " << c.experts << " experts (top-" << c.top_k << (c.sigmoid_router ? ", sigmoid" : "")
        << (c.norm_topk_prob ? "" : ", not renormalized");
      if (c.expert_groups > 1) s << ", " << c.top_groups << " of " << c.expert_groups << " groups";
      if (c.routed_scaling != 1.0) s << ", scaled " << c.routed_scaling;
      if (c.expert_bias) s << ", biased";
      if (c.swiglu_limit > 0) s << ", SwiGLU clamped at " << c.swiglu_limit;
      if (c.capacity_factor != 1.0) s << ", capacity factor " << c.capacity_factor;
      s << ")";
      if (c.shared_experts > 0) s << " + " << c.shared_experts << " shared";
    }
    if (c.mtp_layers > 0) s << ", " << c.mtp_layers << " multi-token prediction layer" << (c.mtp_layers > 1 ? "s" : "");
    if (c.family == Family::vit)
      s << ", image " << c.image_size << "/" << c.patch_size << ", classes " << c.classes;
    else
      s << ", vocab " << c.vocab << (c.tied_embeddings ? " (tied)" : "") << ", seq " << c.seq;
    if (!c.rope_scaling.type.empty()) s << ", rope " << c.rope_scaling.type << " x" << c.rope_scaling.factor;
    if (c.rope_scaling.type == "yarn" && !c.rope_scaling.truncate) s << " (untruncated)";
  }
  s << ", weights " << weights_name(c.weights);
  return s.str();
}

}  // namespace symtensor::models
