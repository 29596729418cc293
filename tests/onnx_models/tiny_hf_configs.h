#pragma once
// Tiny Hugging Face configs the model, export and verify tests share: small enough to build
// and run in ONNX Runtime in a test, with every feature of their family in play.
namespace symtensor::testing {

// DeepSeek-V3: latent attention with YaRN, one dense layer then MoE layers of 8 routed experts
// and one shared, V3's sigmoid router (2 of 4 groups).
inline constexpr const char* kDeepSeekV3Tiny = R"({"model_type": "deepseek_v3", "hidden_size": 64, "intermediate_size": 96,
    "moe_intermediate_size": 32, "num_hidden_layers": 3, "first_k_dense_replace": 1, "num_attention_heads": 4,
    "q_lora_rank": 32, "kv_lora_rank": 16, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16,
    "n_routed_experts": 8, "num_experts_per_tok": 2, "n_shared_experts": 1, "n_group": 4, "topk_group": 2,
    "vocab_size": 128, "max_position_embeddings": 64, "routed_scaling_factor": 2.5,
    "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 4, "mscale": 1.0, "mscale_all_dim": 1.0,
                     "original_max_position_embeddings": 16, "type": "yarn"}})";

// gpt-oss: a sliding-window layer (window 4) and a full one, attention sinks, 4 experts top-2,
// YaRN without truncation.
inline constexpr const char* kGptOssTiny = R"({"model_type": "gpt_oss", "hidden_size": 64, "intermediate_size": 48,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "num_local_experts": 4, "num_experts_per_tok": 2, "vocab_size": 128, "max_position_embeddings": 64,
    "sliding_window": 4, "layer_types": ["sliding_attention", "full_attention"], "rope_theta": 150000,
    "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 4.0, "original_max_position_embeddings": 16,
                     "rope_type": "yarn", "truncate": false}})";

// Nemotron (Minitron-8B's shape: heads x head_dim != hidden): LayerNorm1P, the squared-ReLU
// MLP, rotary on half of each head of 32, grouped-query attention.
inline constexpr const char* kNemotronTiny = R"({"model_type": "nemotron", "hidden_size": 64, "intermediate_size": 96,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
    "hidden_act": "relu2", "partial_rotary_factor": 0.5, "norm_eps": 1e-05, "vocab_size": 128,
    "max_position_embeddings": 64, "rope_theta": 10000, "attention_bias": false, "mlp_bias": false,
    "tie_word_embeddings": false})";

}  // namespace symtensor::testing
