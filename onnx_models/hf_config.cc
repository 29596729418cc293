#include "onnx_models/hf_config.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace symtensor::models {

namespace {

using Json = nlohmann::json;

// What each refused family has that the zoo does not write yet (one line each).
const std::map<std::string, std::string>& hf_refused_families() {
  static const std::map<std::string, std::string> refused = {
      {"gemma3", "the vision tower of this multimodal config (its text_config alone is a gemma3_text config)"},
      {"gemma2", "logit soft-capping, alternating sliding-window layers, GeGLU MLP and the extra norms"},
      {"gemma", "GeGLU MLP, (1 + weight) RMSNorm and the scaled embedding"},
      {"qwen2_moe", "the shared expert with its sigmoid gate, and mixed dense/sparse layers"},
      {"phi3", "fused qkv/gate_up projections and longrope scaling"},
  };
  return refused;
}

class HfReader {
 public:
  HfReader(const Json& json, std::string source) : j_(json), source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& what) const { throw std::runtime_error(source_ + ": " + what); }

  bool has(const char* key) const { return j_.contains(key) && !j_.at(key).is_null(); }

  const Json& at(const char* key) const {
    if (!j_.contains(key)) fail("missing key '" + std::string(key) + "'" + for_type());
    return j_.at(key);
  }

  std::int64_t integer(const Json& v, const std::string& key, bool positive = true) const {
    std::int64_t value = 0;
    if (v.is_number_integer()) {
      value = v.get<std::int64_t>();
    } else if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
               std::abs(v.get<double>()) < 9.0e15) {
      value = static_cast<std::int64_t>(v.get<double>());
    } else {
      fail("key '" + key + "' must be an integer, got " + v.dump());
    }
    if (positive && value <= 0) fail("key '" + key + "' must be positive, got " + v.dump());
    if (!positive && value < 0) fail("key '" + key + "' must not be negative, got " + v.dump());
    return value;
  }
  std::int64_t integer(const char* key) const { return integer(at(key), key); }
  std::int64_t integer_or(const char* key, std::int64_t fallback) const {
    return has(key) ? integer(j_.at(key), key) : fallback;
  }

  double number(const Json& v, const std::string& key) const {
    if (!v.is_number()) fail("key '" + key + "' must be a number, got " + v.dump());
    return v.get<double>();
  }
  double positive_number_or(const char* key, double fallback) const {
    if (!has(key)) return fallback;
    const double value = number(j_.at(key), key);
    if (!(value > 0)) fail("key '" + std::string(key) + "' must be positive, got " + j_.at(key).dump());
    return value;
  }

  bool boolean_or(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    if (!j_.at(key).is_boolean()) fail("key '" + std::string(key) + "' must be true or false, got " + j_.at(key).dump());
    return j_.at(key).get<bool>();
  }

  std::string string(const char* key) const {
    const Json& v = at(key);
    if (!v.is_string()) fail("key '" + std::string(key) + "' must be a string, got " + v.dump());
    return v.get<std::string>();
  }

  // "<source>: model_type 'x': key 'k' = v is not written yet (what is)": refused rather than
  // written as a different model.
  [[noreturn]] void refuse(const std::string& key, const std::string& what, const std::string& written = "") const {
    fail("model_type '" + type_ + "': key '" + key + "' " + what + " is not written yet" +
         (written.empty() ? "" : " (" + written + ")"));
  }

  void set_type(const std::string& type) { type_ = type; }
  const std::string& type() const { return type_; }

 private:
  std::string for_type() const { return type_.empty() ? "" : " (model_type '" + type_ + "')"; }

  const Json& j_;
  std::string source_;
  std::string type_;
};

// HF's per-class defaults for fields a published config may leave out.
struct HfDefaults {
  double norm_epsilon;
  double rope_theta;
  std::int64_t max_positions;
};

HfDefaults hf_defaults(const std::string& type) {
  if (type == "llama") return {1e-6, 10000.0, 2048};
  if (type == "mistral") return {1e-6, 10000.0, 4096 * 32};
  if (type == "mixtral") return {1e-5, 1e6, 4096 * 32};
  if (type == "gemma3_text") return {1e-6, 1e6, 131072};
  if (type == "deepseek_v2" || type == "deepseek_v3") return {1e-6, 10000.0, type == "deepseek_v3" ? 4096 : 2048};
  if (type == "gpt_oss") return {1e-5, 150000.0, 131072};
  if (type == "nemotron") return {1e-5, 10000.0, 4096};
  return {1e-6, 10000.0, 32768};  // qwen2, qwen3, qwen3_moe
}

void read_rope(const HfReader& r, const Json& j, ModelConfig& c, double default_theta, bool yarn_allowed) {
  // transformers >= 4.56 may hold theta and scaling together in rope_parameters.
  const Json* scaling = nullptr;
  std::string scaling_key = "rope_scaling";
  c.rope_theta = r.positive_number_or("rope_theta", default_theta);
  if (r.has("rope_parameters")) {
    const Json& p = j.at("rope_parameters");
    if (!p.is_object()) r.fail("key 'rope_parameters' must be an object, got " + p.dump());
    if (p.contains("rope_theta")) c.rope_theta = r.number(p.at("rope_theta"), "rope_parameters.rope_theta");
    scaling = &p, scaling_key = "rope_parameters";
  } else if (r.has("rope_scaling")) {
    scaling = &j.at("rope_scaling");
    if (!scaling->is_object()) r.fail("key 'rope_scaling' must be an object or null, got " + scaling->dump());
  }
  if (!scaling) return;
  const Json& s = *scaling;
  std::string type;
  for (const char* key : {"rope_type", "type"})
    if (s.contains(key) && s.at(key).is_string()) type = s.at(key).get<std::string>();
  if (type.empty() || type == "default") return;
  auto field = [&](const char* key) -> const Json& {
    if (!s.contains(key)) r.fail("missing key '" + scaling_key + "." + key + "' (rope type '" + type + "')");
    return s.at(key);
  };
  if (type == "linear") {
    c.rope_scaling.type = type;
    c.rope_scaling.factor = r.number(field("factor"), scaling_key + ".factor");
  } else if (type == "llama3") {
    c.rope_scaling.type = type;
    c.rope_scaling.factor = r.number(field("factor"), scaling_key + ".factor");
    c.rope_scaling.low_freq_factor = r.number(field("low_freq_factor"), scaling_key + ".low_freq_factor");
    c.rope_scaling.high_freq_factor = r.number(field("high_freq_factor"), scaling_key + ".high_freq_factor");
    c.rope_scaling.original_max_positions =
        r.integer(field("original_max_position_embeddings"), scaling_key + ".original_max_position_embeddings");
  } else if (type == "yarn" && yarn_allowed) {  // transformers' _compute_yarn_parameters
    c.rope_scaling.type = type;
    c.rope_scaling.factor = r.number(field("factor"), scaling_key + ".factor");
    c.rope_scaling.original_max_positions =
        s.contains("original_max_position_embeddings")
            ? r.integer(s.at("original_max_position_embeddings"), scaling_key + ".original_max_position_embeddings")
            : c.seq;
    auto optional = [&](const char* key, double& value) {
      if (s.contains(key) && !s.at(key).is_null()) value = r.number(s.at(key), scaling_key + "." + key);
    };
    optional("beta_fast", c.rope_scaling.beta_fast);
    optional("beta_slow", c.rope_scaling.beta_slow);
    optional("mscale", c.rope_scaling.mscale);
    optional("mscale_all_dim", c.rope_scaling.mscale_all_dim);
    optional("attention_factor", c.rope_scaling.attention_factor);
    if (s.contains("truncate") && !s.at("truncate").is_null()) {  // gpt-oss: false
      if (!s.at("truncate").is_boolean())
        r.fail("key '" + scaling_key + ".truncate' must be true or false, got " + s.at("truncate").dump());
      c.rope_scaling.truncate = s.at("truncate").get<bool>();
    }
  } else {
    r.refuse(scaling_key, "with rope type '" + type + "'",
             yarn_allowed ? "written: default, linear, llama3, yarn" : "written: default, linear, llama3");
  }
}

// DeepSeek-V2/V3: multi-head latent attention and the mixture of fine-grained experts after
// the dense first layers, with the router of topk_method (V3's noaux_tc: sigmoid scores plus
// the correction bias, groups ranked by their best two; V2's greedy, or group_limited_greedy:
// softmax, groups ranked by their best one).
void read_deepseek(const HfReader& r, const Json& j, ModelConfig& c) {
  const bool v3 = r.type() == "deepseek_v3";
  c.kv_heads = c.heads;  // MLA has no kv heads; num_key_value_heads is not read by HF's code
  c.head_dim = 0;
  c.q_lora_rank = r.has("q_lora_rank") ? r.integer("q_lora_rank") : 0;
  c.kv_lora_rank = r.integer("kv_lora_rank");
  c.qk_nope_head_dim = r.integer("qk_nope_head_dim");
  c.qk_rope_head_dim = r.integer("qk_rope_head_dim");
  c.v_head_dim = r.integer("v_head_dim");
  if (c.qk_rope_head_dim % 2 != 0) r.fail("key 'qk_rope_head_dim' must be even, got " + std::to_string(c.qk_rope_head_dim));
  if (!r.boolean_or("rope_interleave", true)) r.refuse("rope_interleave", "= false", "written: the interleaved rope of the checkpoints");
  c.experts = r.integer("n_routed_experts");
  c.top_k = r.integer("num_experts_per_tok");
  if (c.top_k > c.experts)
    r.fail("key 'num_experts_per_tok' (" + std::to_string(c.top_k) + ") exceeds 'n_routed_experts' (" +
           std::to_string(c.experts) + ")");
  c.intermediate = r.integer("moe_intermediate_size");
  c.dense_intermediate = r.integer("intermediate_size");
  c.first_dense_layers = r.has("first_k_dense_replace") ? r.integer(j.at("first_k_dense_replace"), "first_k_dense_replace", false) : 0;
  if (c.first_dense_layers > c.layers)
    r.fail("key 'first_k_dense_replace' (" + std::to_string(c.first_dense_layers) + ") exceeds 'num_hidden_layers'");
  if (r.integer_or("moe_layer_freq", 1) != 1)
    r.refuse("moe_layer_freq", "= " + j.at("moe_layer_freq").dump(), "dense layers between sparse ones");
  c.shared_experts = r.has("n_shared_experts") ? r.integer(j.at("n_shared_experts"), "n_shared_experts", false) : 0;
  c.norm_topk_prob = r.boolean_or("norm_topk_prob", v3);
  c.routed_scaling = r.positive_number_or("routed_scaling_factor", v3 ? 2.5 : 1.0);
  const std::string scoring = r.has("scoring_func") ? r.string("scoring_func") : (v3 ? "sigmoid" : "softmax");
  const std::string method = r.has("topk_method") ? r.string("topk_method") : (v3 ? "noaux_tc" : "greedy");
  if (scoring != (v3 ? "sigmoid" : "softmax"))
    r.refuse("scoring_func", "= \"" + scoring + "\"", v3 ? "written: \"sigmoid\"" : "written: \"softmax\"");
  const bool grouped = v3 ? method == "noaux_tc" : method == "group_limited_greedy";
  if (!grouped && (v3 || method != "greedy"))
    r.refuse("topk_method", "= \"" + method + "\"",
             v3 ? "written: \"noaux_tc\"" : "written: \"greedy\", \"group_limited_greedy\"");
  c.sigmoid_router = v3;
  if (grouped) {
    c.expert_groups = r.integer_or("n_group", 1);
    c.top_groups = r.integer_or("topk_group", 1);
    c.group_top = v3 ? 2 : 1;
    if (c.experts % c.expert_groups != 0)
      r.fail("key 'n_group' (" + std::to_string(c.expert_groups) + ") must divide 'n_routed_experts' (" +
             std::to_string(c.experts) + ")");
    if (c.top_groups > c.expert_groups)
      r.fail("key 'topk_group' (" + std::to_string(c.top_groups) + ") exceeds 'n_group'");
    if (c.expert_groups == 1) c.top_groups = 1;
  }
}

}  // namespace

const std::vector<std::string>& hf_model_types() {
  static const std::vector<std::string> types = {"llama",       "mistral",     "mixtral",     "qwen2",
                                                 "qwen3",       "qwen3_moe",   "gemma3_text", "deepseek_v2",
                                                 "deepseek_v3", "gpt_oss",     "nemotron"};
  return types;
}

ModelConfig config_from_hf_json(const std::string& text, const std::string& source) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw std::runtime_error(source + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  HfReader r(j, source);
  if (!j.is_object()) r.fail("expected a JSON object (a Hugging Face config.json)");
  const std::string type = r.string("model_type");
  r.set_type(type);
  bool written = false;
  for (const auto& t : hf_model_types()) written |= t == type;
  if (!written) {
    const auto& refused = hf_refused_families();
    std::string supported;
    for (const auto& t : hf_model_types()) supported += (supported.empty() ? "" : ", ") + t;
    if (auto it = refused.find(type); it != refused.end())
      r.fail("model_type '" + type + "' is not supported yet: " + it->second + " (written: " + supported + ")");
    r.fail("model_type '" + type + "' is not supported (written: " + supported + ")");
  }

  const HfDefaults defaults = hf_defaults(type);
  const bool moe = type == "mixtral" || type == "qwen3_moe";
  const bool qwen3 = type == "qwen3" || type == "qwen3_moe";
  const bool gemma3 = type == "gemma3_text";
  const bool deepseek = type == "deepseek_v2" || type == "deepseek_v3";
  const bool gpt_oss = type == "gpt_oss";
  const bool nemotron = type == "nemotron";
  ModelConfig c;
  c.family = Family::llama;
  c.model_type = type;
  c.weights = Weights::none;
  c.layers = r.integer("num_hidden_layers");
  c.hidden = r.integer("hidden_size");
  c.heads = r.integer("num_attention_heads");
  c.vocab = r.integer("vocab_size");
  // num_key_value_heads: Llama's config takes the heads when it is absent or null; the
  // others' classes default to a fixed count unrelated to the model, so it must be given.
  if (deepseek)
    c.kv_heads = c.heads;  // read_deepseek
  else if (type == "llama" || nemotron || (j.contains("num_key_value_heads") && j.at("num_key_value_heads").is_null()))
    c.kv_heads = r.integer_or("num_key_value_heads", c.heads);
  else
    c.kv_heads = r.integer("num_key_value_heads");
  if (c.heads % c.kv_heads != 0)
    r.fail("key 'num_key_value_heads' (" + std::to_string(c.kv_heads) + ") must divide 'num_attention_heads' (" +
           std::to_string(c.heads) + ")");
  // head_dim: Qwen3's, Gemma 3's and gpt-oss's classes default to 128 / 256 / 64 whatever the
  // width, so it must be given there.
  c.head_dim = qwen3 || gemma3 || gpt_oss ? r.integer("head_dim") : deepseek ? 0 : r.integer_or("head_dim", 0);
  if (c.head_dim == 0 && c.hidden % c.heads != 0 && !deepseek)
    r.fail("key 'hidden_size' (" + std::to_string(c.hidden) + ") is not a multiple of 'num_attention_heads' (" +
           std::to_string(c.heads) + ") and there is no 'head_dim'");
  if (c.head_dim * c.heads == c.hidden) c.head_dim = 0;  // the usual layout, described as such
  c.seq = r.integer_or("max_position_embeddings", defaults.max_positions);
  c.norm_epsilon = r.positive_number_or(nemotron ? "norm_eps" : "rms_norm_eps", defaults.norm_epsilon);
  read_rope(r, j, c, defaults.rope_theta, /*yarn_allowed=*/deepseek || gpt_oss);
  c.tied_embeddings = r.boolean_or("tie_word_embeddings", gemma3);  // Gemma3TextConfig ties by default
  if (gemma3) {
    if (!c.tied_embeddings) r.refuse("tie_word_embeddings", "= false", "Gemma 3's head is its embedding");
    const Json& act = r.has("hidden_activation") ? j.at("hidden_activation") : Json("gelu_pytorch_tanh");
    if (!act.is_string() || act.get<std::string>() != "gelu_pytorch_tanh")
      r.refuse("hidden_activation", "= " + act.dump(), "written: \"gelu_pytorch_tanh\", GeGLU");
    for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"})
      if (r.has(key)) r.refuse(key, "= " + j.at(key).dump(), "soft-capping");
    if (r.boolean_or("use_bidirectional_attention", false)) r.refuse("use_bidirectional_attention", "= true");
    c.query_pre_attn_scalar = r.positive_number_or("query_pre_attn_scalar", 256);
    c.rope_local_theta = r.positive_number_or("rope_local_base_freq", 10000.0);
    c.sliding_window = r.integer("sliding_window");
    c.global_every = r.integer_or("sliding_window_pattern", 6);
  } else if (nemotron) {
    // NemotronForCausalLM: LayerNorm1P everywhere, the squared-ReLU MLP (biased under
    // mlp_bias), rotary on the first partial_rotary_factor of each head.
    const Json& act = r.has("hidden_act") ? j.at("hidden_act") : Json("relu2");
    if (!act.is_string() || act.get<std::string>() != "relu2")
      r.refuse("hidden_act", "= " + act.dump(), "written: \"relu2\", the squared-ReLU MLP");
    c.layer_norm_1p = true;
    c.mlp_bias = r.boolean_or("mlp_bias", false);
    c.partial_rotary = r.positive_number_or("partial_rotary_factor", 0.5);
    if (c.partial_rotary > 1) r.fail("key 'partial_rotary_factor' must be at most 1, got " + j.at("partial_rotary_factor").dump());
  } else if (r.has("hidden_act")) {
    const Json& act = j.at("hidden_act");
    if (!act.is_string() || act.get<std::string>() != "silu")
      r.refuse("hidden_act", "= " + act.dump(), "written: \"silu\", the SwiGLU MLP");
  }
  if (!nemotron && r.boolean_or("mlp_bias", false)) r.refuse("mlp_bias", "= true");
  // Biases: Qwen2 has them on q/k/v always; Llama's and Qwen3's attention_bias puts them on
  // q/k/v and o_proj.
  if (type == "qwen2") {
    c.qkv_bias = true;
  } else if (gpt_oss) {  // GptOssConfig's attention_bias defaults to true
    c.qkv_bias = c.out_bias = r.boolean_or("attention_bias", true);
  } else if (r.boolean_or("attention_bias", false)) {
    if (type == "mistral" || type == "mixtral" || gemma3 || deepseek) r.refuse("attention_bias", "= true");
    c.qkv_bias = c.out_bias = true;
  }
  c.qk_norm = qwen3 || gemma3;

  // Sliding window: Mistral and Mixtral mask with it when it is set; Qwen's only under
  // use_sliding_window (and then on layers from max_window_layers), which is refused.
  if (type == "mistral" || type == "mixtral") {
    if (r.has("sliding_window")) c.sliding_window = r.integer(j.at("sliding_window"), "sliding_window");
  } else if (gpt_oss) {  // every other layer windowed unless layer_types says otherwise (below)
    c.sliding_window = r.integer("sliding_window");
    c.global_every = 2;
  } else if (!gemma3 && r.boolean_or("use_sliding_window", false)) {
    r.refuse("use_sliding_window", "= true", "Qwen's sliding-window layers above max_window_layers");
  }
  if (r.has("layer_types")) {
    const Json& types = j.at("layer_types");
    if (!types.is_array()) r.fail("key 'layer_types' must be a list, got " + types.dump());
    if (static_cast<std::int64_t>(types.size()) != c.layers)
      r.fail("key 'layer_types' lists " + std::to_string(types.size()) + " layers, 'num_hidden_layers' is " +
             std::to_string(c.layers));
    // What the model writes, layer by layer: Gemma 3 and gpt-oss local except every
    // global_every-th (from layer_types when it is there); the others all alike.
    const bool periodic = gemma3 || gpt_oss;
    if (periodic) {
      c.global_every = 0;
      for (std::size_t i = 0; i < types.size() && c.global_every == 0; ++i)
        if (types[i] == "full_attention") c.global_every = static_cast<std::int64_t>(i) + 1;
    }
    for (std::size_t i = 0; i < types.size(); ++i) {
      const bool global = periodic ? c.global_every > 0 && (static_cast<std::int64_t>(i) + 1) % c.global_every == 0
                                   : c.sliding_window == 0;
      const char* expected = global ? "full_attention" : "sliding_attention";
      if (types[i] != expected)
        r.refuse("layer_types", "with layer " + std::to_string(i) + " " + types[i].dump(),
                 std::string("written: ") + (periodic ? "a global layer every " + std::to_string(c.global_every)
                                                    : std::string("every layer ") + expected));
    }
  }

  if (deepseek) {
    read_deepseek(r, j, c);
  } else if (gpt_oss) {
    // GptOssForCausalLM: attention sinks; a biased router, softmax over its top-k logits;
    // experts of intermediate_size with biased, interleaved gate_up and clamped SwiGLU.
    c.attention_sinks = true;
    c.experts = r.integer("num_local_experts");
    c.top_k = r.integer("num_experts_per_tok");
    if (r.has("experts_per_token") && r.integer("experts_per_token") != c.top_k)
      r.fail("key 'experts_per_token' differs from 'num_experts_per_tok'");
    if (c.top_k > c.experts)
      r.fail("key 'num_experts_per_tok' (" + std::to_string(c.top_k) + ") exceeds 'num_local_experts' (" +
             std::to_string(c.experts) + ")");
    c.intermediate = r.integer("intermediate_size");
    c.norm_topk_prob = true;
    c.expert_bias = true;
    c.swiglu_limit = r.positive_number_or("swiglu_limit", 7.0);
  } else if (moe) {
    if (type == "mixtral") {
      c.experts = r.integer("num_local_experts");
      c.intermediate = r.integer("intermediate_size");  // each expert's width
    } else {
      c.experts = r.integer("num_experts");
      c.intermediate = r.integer("moe_intermediate_size");
      // Qwen3MoeConfig's default is false; the published configs say true.
      c.norm_topk_prob = r.boolean_or("norm_topk_prob", false);
      if (r.integer_or("decoder_sparse_step", 1) != 1)
        r.refuse("decoder_sparse_step", "= " + j.at("decoder_sparse_step").dump(), "dense layers between sparse ones");
      if (r.has("mlp_only_layers")) {
        const Json& dense = j.at("mlp_only_layers");
        if (!dense.is_array()) r.fail("key 'mlp_only_layers' must be a list, got " + dense.dump());
        if (!dense.empty()) r.refuse("mlp_only_layers", "= " + dense.dump(), "dense layers among the sparse ones");
      }
      if (r.integer_or("shared_expert_intermediate_size", 0) > 0) r.refuse("shared_expert_intermediate_size", "> 0", "shared experts");
    }
    c.top_k = r.integer("num_experts_per_tok");
    if (c.top_k > c.experts)
      r.fail("key 'num_experts_per_tok' (" + std::to_string(c.top_k) + ") exceeds the experts (" +
             std::to_string(c.experts) + ")");
  } else {
    c.intermediate = r.integer("intermediate_size");
  }
  c.name = type;
  if (j.contains("_name_or_path") && j.at("_name_or_path").is_string() && !j.at("_name_or_path").get<std::string>().empty())
    c.name = j.at("_name_or_path").get<std::string>();
  try {
    validate(c);
  } catch (const std::runtime_error& e) {
    r.fail(e.what());
  }
  return c;
}

ModelConfig load_hf_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open config file '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) throw std::runtime_error("cannot read config file '" + path + "'");
  ModelConfig c = config_from_hf_json(text.str(), path);
  if (c.name == c.model_type) {  // no _name_or_path: the file, or its folder for config.json
    const std::filesystem::path p(path);
    const std::filesystem::path folder = std::filesystem::absolute(p).parent_path().filename();
    c.name = p.filename() == "config.json" && !folder.empty() ? folder.string() : p.stem().string();
  }
  return c;
}

}  // namespace symtensor::models
