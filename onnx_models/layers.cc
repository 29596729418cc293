#include "onnx_models/layers.h"

#include <cmath>
#include <numeric>
#include <utility>
#include <limits>
#include <vector>

namespace symtensor::models {

namespace {

double fan_in_bound(std::int64_t fan_in) { return 1.0 / std::sqrt(static_cast<double>(fan_in)); }

std::vector<std::int64_t> perm(std::initializer_list<std::int64_t> p) { return p; }

}  // namespace

std::string linear(GraphBuilder& g, const std::string& x, const std::string& module, std::int64_t in,
                   std::int64_t out, bool bias) {
  const double bound = fan_in_bound(in);
  std::string w = g.parameter(module + ".weight", {in, out}, Init::uniform(bound));
  std::string y = g.op("MatMul", {x, w});
  if (!bias) return y;
  std::string b = g.parameter(module + ".bias", {out}, Init::uniform(bound));
  return g.op("Add", {y, b});
}

std::string gemm_linear(GraphBuilder& g, const std::string& x, const std::string& module, std::int64_t in,
                        std::int64_t out) {
  const double bound = fan_in_bound(in);
  std::string w = g.parameter(module + ".weight", {out, in}, Init::uniform(bound));
  std::string b = g.parameter(module + ".bias", {out}, Init::uniform(bound));
  return g.op("Gemm", {x, w, b}, {{"alpha", 1.0f}, {"beta", 1.0f}, {"transB", std::int64_t{1}}});
}

std::string layer_norm(GraphBuilder& g, const std::string& x, const std::string& module, std::int64_t hidden,
                       double epsilon, bool unit_offset) {
  std::string scale = g.parameter(module + ".weight", {hidden}, unit_offset ? Init::uniform(0.1) : Init::around(1.0, 0.1));
  std::string bias = g.parameter(module + ".bias", {hidden}, Init::uniform(0.1));
  if (unit_offset) scale = g.op("Add", {scale, g.float_scalar(1.0f)});
  return g.op("LayerNormalization", {x, scale, bias},
              {{"axis", std::int64_t{-1}}, {"epsilon", static_cast<float>(epsilon)}});
}

std::string rms_norm(GraphBuilder& g, const std::string& x, const std::string& module, std::int64_t hidden,
                     double epsilon, bool unit_offset) {
  std::string weight = g.parameter(module + ".weight", {hidden},
                                   unit_offset ? Init::uniform(0.1) : Init::around(1.0, 0.1));
  std::string squared = g.op("Pow", {x, g.float_scalar(2.0f)});
  std::string mean = g.op("ReduceMean", {squared}, {{"axes", perm({-1})}, {"keepdims", std::int64_t{1}}});
  std::string shifted = g.op("Add", {mean, g.float_scalar(static_cast<float>(epsilon))});
  std::string root = g.op("Sqrt", {shifted});
  std::string inverse = g.op("Div", {g.float_scalar(1.0f), root});
  std::string normed = g.op("Mul", {x, inverse});
  if (unit_offset) weight = g.op("Add", {weight, g.float_scalar(1.0f)});
  return g.op("Mul", {weight, normed});
}

std::string gelu(GraphBuilder& g, const std::string& x) {
  std::string scaled = g.op("Div", {x, g.float_scalar(1.4142135381698608f)});
  std::string erf = g.op("Erf", {scaled});
  std::string shifted = g.op("Add", {erf, g.float_scalar(1.0f)});
  std::string product = g.op("Mul", {x, shifted});
  return g.op("Mul", {product, g.float_scalar(0.5f)});
}

std::string silu(GraphBuilder& g, const std::string& x) { return g.op("Mul", {x, g.op("Sigmoid", {x})}); }

std::string gelu_tanh(GraphBuilder& g, const std::string& x) {
  std::string cube = g.op("Pow", {x, g.float_scalar(3.0f)});
  std::string inner = g.op("Add", {x, g.op("Mul", {cube, g.float_scalar(0.044715f)})});
  std::string t = g.op("Tanh", {g.op("Mul", {inner, g.float_scalar(0.7978845608028654f)})});
  std::string half = g.op("Mul", {x, g.float_scalar(0.5f)});
  return g.op("Mul", {half, g.op("Add", {t, g.float_scalar(1.0f)})});
}

Rotary rotary_tables(GraphBuilder& g, const std::string& position_ids, std::int64_t head_dim, double theta) {
  std::vector<float> inv_freq;
  for (std::int64_t i = 0; i < head_dim; i += 2)
    inv_freq.push_back(static_cast<float>(1.0 / std::pow(theta, static_cast<double>(i) / head_dim)));
  return rotary_tables(g, position_ids, inv_freq);
}

Rotary rotary_tables(GraphBuilder& g, const std::string& position_ids, const std::vector<float>& inv_freq,
                     double attention_factor) {
  g.push("rotary_emb");
  std::string positions = g.op("Cast", {position_ids}, {{"to", std::int64_t{onnx::TensorProto::FLOAT}}});
  std::string column = g.op("Unsqueeze", {positions, g.ints({-1})});      // [b, s, 1]
  std::string freqs = g.op("Mul", {column, g.floats(inv_freq)});         // [b, s, hd/2]
  std::string emb = g.op("Concat", {freqs, freqs}, {{"axis", std::int64_t{-1}}});  // [b, s, hd]
  Rotary r{g.op("Cos", {emb}), g.op("Sin", {emb})};
  if (attention_factor != 1.0) {
    const std::string factor = g.float_scalar(static_cast<float>(attention_factor));
    r.cos = g.op("Mul", {r.cos, factor});
    r.sin = g.op("Mul", {r.sin, factor});
  }
  g.pop();
  return r;
}

std::string causal_mask(GraphBuilder& g, const std::string& position_ids) {
  // Written from the positions rather than a [max, max] buffer, so that no large constant
  // is stored and every shape stays symbolic: masked where key position > query position.
  std::string keys = g.op("Unsqueeze", {position_ids, g.ints({1})});     // [b, 1, s]
  std::string queries = g.op("Unsqueeze", {position_ids, g.ints({2})});  // [b, s, 1]
  std::string future = g.op("Greater", {keys, queries});                 // [b, s, s]
  return g.op("Where", {future, g.float_scalar(-1e9f), g.float_scalar(0.0f)});
}

std::string sliding_window_mask(GraphBuilder& g, const std::string& position_ids, std::int64_t window) {
  std::string keys = g.op("Unsqueeze", {position_ids, g.ints({1})});     // [b, 1, s]
  std::string queries = g.op("Unsqueeze", {position_ids, g.ints({2})});  // [b, s, 1]
  std::string future = g.op("Greater", {keys, queries});                 // [b, s, s]
  std::string distance = g.op("Sub", {queries, keys});                   // q - k
  std::string too_far = g.op("GreaterOrEqual", {distance, g.int_scalar(window)});
  std::string hidden = g.op("Or", {future, too_far});
  return g.op("Where", {hidden, g.float_scalar(-1e9f), g.float_scalar(0.0f)});
}

std::string mask_for_scores(GraphBuilder& g, const std::string& mask3, bool grouped) {
  return g.op("Unsqueeze", {mask3, grouped ? g.ints({1, 2}) : g.ints({1})});
}

namespace {

// rotate_half(x) = concat(-x[..., d/2:], x[..., :d/2]); x*cos + rotate_half(x)*sin.
std::string apply_rotary(GraphBuilder& g, const std::string& x, const std::string& cos, const std::string& sin,
                         std::int64_t head_dim) {
  const std::int64_t half = head_dim / 2;
  std::string x1 = g.op("Slice", {x, g.ints({0}), g.ints({half}), g.ints({-1}), g.ints({1})});
  std::string x2 = g.op("Slice", {x, g.ints({half}), g.ints({std::numeric_limits<std::int64_t>::max()}),
                                  g.ints({-1}), g.ints({1})});
  std::string rotated = g.op("Concat", {g.op("Neg", {x2}), x1}, {{"axis", std::int64_t{-1}}});
  return g.op("Add", {g.op("Mul", {x, cos}), g.op("Mul", {rotated, sin})});
}

// HF's apply_rotary_pos_emb with tables narrower than the head (Nemotron): x[..., :rotary]
// rotated, x[..., rotary:] passed, concatenated back.
std::string apply_partial_rotary(GraphBuilder& g, const std::string& x, const std::string& cos, const std::string& sin,
                                 std::int64_t rotary, std::int64_t head_dim) {
  if (rotary == 0 || rotary == head_dim) return apply_rotary(g, x, cos, sin, head_dim);
  std::string rotated = g.op("Slice", {x, g.ints({0}), g.ints({rotary}), g.ints({-1}), g.ints({1})});
  std::string passed = g.op("Slice", {x, g.ints({rotary}), g.ints({std::numeric_limits<std::int64_t>::max()}),
                                      g.ints({-1}), g.ints({1})});
  return g.op("Concat", {apply_rotary(g, rotated, cos, sin, rotary), passed}, {{"axis", std::int64_t{-1}}});
}

}  // namespace

std::string self_attention(GraphBuilder& g, const std::string& x, const AttentionSpec& spec) {
  const std::int64_t h = spec.hidden;
  const std::int64_t head_dim = spec.head_dim > 0 ? spec.head_dim : h / spec.heads;
  const std::int64_t width = spec.heads * head_dim;  // q and the context: h, or not (Qwen3)
  const std::int64_t kv = spec.kv_heads;
  const std::int64_t rep = spec.heads / kv;
  const bool grouped = kv != spec.heads;
  std::string q, k, v;
  if (spec.fused_qkv) {
    std::string qkv = linear(g, x, spec.qkv_name, h, 3 * width, spec.qkv_bias);
    auto parts = g.op_n("Split", {qkv}, 3, {{"axis", std::int64_t{2}}});
    q = parts[0], k = parts[1], v = parts[2];
  } else {
    q = linear(g, x, spec.q_name, h, width, spec.qkv_bias);
    k = linear(g, x, spec.k_name, h, kv * head_dim, spec.qkv_bias);
    v = linear(g, x, spec.v_name, h, kv * head_dim, spec.qkv_bias);
  }
  std::string kv_shape = g.ints({0, 0, kv, head_dim});
  // q: [b, heads, s, d] or, grouped, [b, kv, rep, s, d] so that K/V broadcast over rep.
  // Qwen3's q_norm/k_norm normalize each head over d, on the [b, s, ..., d] view.
  auto head_norm = [&](const std::string& t, const char* module) {
    return spec.qk_norm ? rms_norm(g, t, module, head_dim, spec.qk_norm_epsilon, spec.qk_norm_unit_offset) : t;
  };
  if (grouped) {
    q = head_norm(g.op("Reshape", {q, g.ints({0, 0, kv, rep, head_dim})}), "q_norm");
    q = g.op("Transpose", {q}, {{"perm", perm({0, 2, 3, 1, 4})}});
  } else {
    q = head_norm(g.op("Reshape", {q, kv_shape}), "q_norm");
    q = g.op("Transpose", {q}, {{"perm", perm({0, 2, 1, 3})}});
  }
  k = g.op("Transpose", {head_norm(g.op("Reshape", {k, kv_shape}), "k_norm")}, {{"perm", perm({0, 2, 1, 3})}});  // [b, kv, s, d]
  v = g.op("Transpose", {g.op("Reshape", {v, kv_shape})}, {{"perm", perm({0, 2, 1, 3})}});
  if (spec.rotary) {
    std::string cos = g.op("Unsqueeze", {spec.rotary->cos, g.ints({1})});  // [b, 1, s, d]
    std::string sin = g.op("Unsqueeze", {spec.rotary->sin, g.ints({1})});
    k = apply_partial_rotary(g, k, cos, sin, spec.rotary_dim, head_dim);
    if (grouped) {
      cos = g.op("Unsqueeze", {cos, g.ints({2})});  // [b, 1, 1, s, d]
      sin = g.op("Unsqueeze", {sin, g.ints({2})});
    }
    q = apply_partial_rotary(g, q, cos, sin, spec.rotary_dim, head_dim);
  }
  if (!spec.past_key.empty()) {  // DynamicCache.update: torch.cat([past, new], dim=-2)
    k = g.op("Concat", {spec.past_key, k}, {{"axis", std::int64_t{2}}});
    v = g.op("Concat", {spec.past_value, v}, {{"axis", std::int64_t{2}}});
    if (spec.present_key) *spec.present_key = k;
    if (spec.present_value) *spec.present_value = v;
  }
  if (grouped) {
    k = g.op("Unsqueeze", {k, g.ints({2})});  // [b, kv, 1, s, d]
    v = g.op("Unsqueeze", {v, g.ints({2})});
  }
  std::string k_t = g.op("Transpose", {k}, {{"perm", grouped ? perm({0, 1, 2, 4, 3}) : perm({0, 1, 3, 2})}});
  std::string scores = g.op("MatMul", {q, k_t});
  const double divisor = spec.score_divisor > 0 ? spec.score_divisor : std::sqrt(static_cast<double>(head_dim));
  scores = g.op("Div", {scores, g.float_scalar(static_cast<float>(divisor))});
  if (!spec.mask.empty()) scores = g.op("Add", {scores, spec.mask});
  std::string probs;
  if (spec.sinks) {
    // sinks.reshape(1, -1, 1, 1).expand(b, -1, s, -1), concatenated after the keys; the sink
    // column leaves the softmax's denominator bigger and is dropped before P·V.
    std::string sinks = g.parameter("sinks", {spec.heads}, Init::uniform(1.0));
    sinks = g.op("Reshape", {sinks, grouped ? g.ints({1, -1, rep, 1, 1}) : g.ints({1, -1, 1, 1})});
    std::string q_shape = g.op("Shape", {q});
    std::string target = g.op("Concat", {g.op("Slice", {q_shape, g.ints({0}), g.ints({-1})}), g.ints({1})},
                              {{"axis", std::int64_t{0}}});  // [b, heads.., s, 1]
    std::string combined = g.op("Concat", {scores, g.op("Expand", {sinks, target})}, {{"axis", std::int64_t{-1}}});
    std::string row_max = g.op("ReduceMax", {combined}, {{"axes", perm({-1})}, {"keepdims", std::int64_t{1}}});
    probs = g.op("Softmax", {g.op("Sub", {combined, row_max})}, {{"axis", std::int64_t{-1}}});
    probs = g.op("Slice", {probs, g.ints({0}), g.ints({-1}), g.ints({-1}), g.ints({1})});  // probs[..., :-1]
  } else {
    probs = g.op("Softmax", {scores}, {{"axis", std::int64_t{-1}}});
  }
  std::string context = g.op("MatMul", {probs, v});
  context = g.op("Transpose", {context}, {{"perm", grouped ? perm({0, 3, 1, 2, 4}) : perm({0, 2, 1, 3})}});
  context = g.op("Reshape", {context, g.ints({0, 0, width})});
  return linear(g, context, spec.out_name, width, h, spec.out_bias);
}

namespace {

// HF's apply_rotary_pos_emb_interleave: the pairs (x0, x1), (x2, x3), ... of [..., d] regrouped
// as (x0, x2, ..., x1, x3, ...) (view [..., d/2, 2], transpose, reshape), then rotate_half.
std::string deinterleave(GraphBuilder& g, const std::string& x, std::int64_t d) {
  std::string pairs = g.op("Reshape", {x, g.ints({0, 0, 0, d / 2, 2})});
  std::string swapped = g.op("Transpose", {pairs}, {{"perm", perm({0, 1, 2, 4, 3})}});
  return g.op("Reshape", {swapped, g.ints({0, 0, 0, d})});
}

}  // namespace

std::string latent_attention(GraphBuilder& g, const std::string& x, const LatentAttentionSpec& spec) {
  const std::int64_t h = spec.hidden, heads = spec.heads, qk = spec.nope + spec.rope;
  const double eps = spec.norm_epsilon;
  auto split = [&](const std::string& t, std::int64_t first, std::int64_t second) {
    return g.op_n("Split", {t, g.ints({first, second})}, 2, {{"axis", std::int64_t{-1}}});
  };
  auto heads_first = [&](const std::string& t, std::int64_t d) {  // [b, s, heads*d] -> [b, heads, s, d]
    return g.op("Transpose", {g.op("Reshape", {t, g.ints({0, 0, heads, d})})}, {{"perm", perm({0, 2, 1, 3})}});
  };
  std::string q;
  if (spec.q_lora_rank > 0) {
    std::string latent = linear(g, x, "q_a_proj", h, spec.q_lora_rank, false);
    latent = rms_norm(g, latent, "q_a_layernorm", spec.q_lora_rank, eps);
    q = linear(g, latent, "q_b_proj", spec.q_lora_rank, heads * qk, false);
  } else {
    q = linear(g, x, "q_proj", h, heads * qk, false);
  }
  const auto q_parts = split(heads_first(q, qk), spec.nope, spec.rope);  // q_pass, q_rot
  const auto kv_a = split(linear(g, x, "kv_a_proj_with_mqa", h, spec.kv_lora_rank + spec.rope, false),
                          spec.kv_lora_rank, spec.rope);  // the latent, the shared rope key
  std::string kv = rms_norm(g, kv_a[0], "kv_a_layernorm", spec.kv_lora_rank, eps);
  kv = linear(g, kv, "kv_b_proj", spec.kv_lora_rank, heads * (spec.nope + spec.v), false);
  const auto kv_parts = split(heads_first(kv, spec.nope + spec.v), spec.nope, spec.v);  // k_pass, values
  std::string q_rot = deinterleave(g, q_parts[1], spec.rope);
  std::string k_rot = deinterleave(g, g.op("Unsqueeze", {kv_a[1], g.ints({1})}), spec.rope);  // [b, 1, s, rope]
  if (spec.rotary) {
    const std::string cos = g.op("Unsqueeze", {spec.rotary->cos, g.ints({1})});  // [b, 1, s, rope]
    const std::string sin = g.op("Unsqueeze", {spec.rotary->sin, g.ints({1})});
    q_rot = apply_rotary(g, q_rot, cos, sin, spec.rope);
    k_rot = apply_rotary(g, k_rot, cos, sin, spec.rope);
  }
  k_rot = g.op("Expand", {k_rot, g.ints({1, heads, 1, 1})});  // the one rope key, for every head
  const std::string query = g.op("Concat", {q_parts[0], q_rot}, {{"axis", std::int64_t{-1}}});  // [b, heads, s, qk]
  const std::string key = g.op("Concat", {kv_parts[0], k_rot}, {{"axis", std::int64_t{-1}}});
  std::string scores = g.op("MatMul", {query, g.op("Transpose", {key}, {{"perm", perm({0, 1, 3, 2})}})});
  const double scale = spec.scale > 0 ? spec.scale : 1.0 / std::sqrt(static_cast<double>(qk));
  scores = g.op("Mul", {scores, g.float_scalar(static_cast<float>(scale))});
  if (!spec.mask.empty()) scores = g.op("Add", {scores, spec.mask});
  std::string probs = g.op("Softmax", {scores}, {{"axis", std::int64_t{-1}}});
  std::string context = g.op("Transpose", {g.op("MatMul", {probs, kv_parts[1]})}, {{"perm", perm({0, 2, 1, 3})}});
  context = g.op("Reshape", {context, g.ints({0, 0, heads * spec.v})});
  return linear(g, context, "o_proj", heads * spec.v, h, false);
}

std::string pre_norm_layer(GraphBuilder& g, const std::string& x, const PreNormLayer& layer,
                           const std::function<std::string(const std::string&)>& mlp) {
  auto residual = [&](const std::string& in, const std::string& norm, const std::string& module, auto&& part) {
    const std::string normed = layer_norm(g, in, norm, layer.hidden, layer.epsilon);
    if (!module.empty()) g.push(module);
    std::string out = g.op("Add", {in, part(normed)});
    if (!module.empty()) g.pop();
    return out;
  };
  const std::string y = residual(x, layer.norm1, layer.attention,
                                 [&](const std::string& a) { return self_attention(g, a, layer.attention_spec); });
  return residual(y, layer.norm2, layer.mlp, mlp);
}

std::string gelu_mlp(GraphBuilder& g, const std::string& x, std::int64_t hidden, std::int64_t intermediate,
                     const char* in_name, const char* out_name) {
  std::string up = linear(g, x, in_name, hidden, intermediate, true);
  return linear(g, gelu(g, up), out_name, intermediate, hidden, true);
}

std::string swiglu_mlp(GraphBuilder& g, const std::string& x, std::int64_t hidden, std::int64_t intermediate,
                       bool gelu_tanh_gate) {
  std::string gate = linear(g, x, "gate_proj", hidden, intermediate, false);
  std::string up = linear(g, x, "up_proj", hidden, intermediate, false);
  std::string act = g.op("Mul", {gelu_tanh_gate ? gelu_tanh(g, gate) : silu(g, gate), up});
  return linear(g, act, "down_proj", intermediate, hidden, false);
}

std::string squared_relu_mlp(GraphBuilder& g, const std::string& x, std::int64_t hidden, std::int64_t intermediate,
                             bool bias) {
  std::string relu = g.op("Relu", {linear(g, x, "up_proj", hidden, intermediate, bias)});
  return linear(g, g.op("Mul", {relu, relu}), "down_proj", intermediate, hidden, bias);
}

namespace {

// cf * top_k / experts as a reduced fraction num/den (cf read to 1/1000), so that the
// capacity ceil(num * seq / den) is computed in integers by the graph and by SymTensor.
std::pair<std::int64_t, std::int64_t> capacity_ratio(double capacity_factor, std::int64_t top_k,
                                                     std::int64_t experts) {
  std::int64_t num = static_cast<std::int64_t>(std::llround(capacity_factor * 1000)) * top_k;
  std::int64_t den = 1000 * experts;
  const std::int64_t d = std::gcd(num, den);
  return {num / d, den / d};
}

}  // namespace

std::string moe_mlp(GraphBuilder& g, const std::string& x, const MoeSpec& spec) {
  const std::int64_t h = spec.hidden, E = spec.experts, k = spec.top_k;
  // Router: logits [b, s, E] -> top-k logits and indices -> softmax over the k logits
  // (equal to Mixtral's softmax-then-renormalize).
  std::string logits = linear(g, x, spec.gpt_oss ? "router" : "gate", h, E, spec.gpt_oss);
  std::vector<std::string> top;
  std::string weights;  // [b, s, k]
  std::string scores;   // DeepSeek's sigmoid scores [b, s, E], the weights taken from them below
  auto ids = [&](std::int64_t n) {
    std::vector<std::int64_t> v;
    for (std::int64_t i = 0; i < n; ++i) v.push_back(i);
    return g.ints(v);
  };
  auto one_hot_of = [&](const std::string& indices, std::int64_t n) {  // [..., m] -> [..., m, n]
    std::string chosen = g.op("Equal", {g.op("Unsqueeze", {indices, g.ints({-1})}), ids(n)});
    return g.op("Cast", {chosen}, {{"to", std::int64_t{onnx::TensorProto::FLOAT}}});
  };
  if (spec.norm_topk_prob && !spec.sigmoid && spec.groups == 1) {
    top = g.op_n("TopK", {logits, g.ints({k})}, 2, {{"axis", std::int64_t{-1}}});
    weights = g.op("Softmax", {top[0]}, {{"axis", std::int64_t{-1}}});
  } else {
    // The top-k of the softmax over all experts (not renormalized), or of DeepSeek-V3's
    // sigmoid scores plus their correction bias.
    std::string choice = g.op(spec.sigmoid ? "Sigmoid" : "Softmax", {logits},
                              spec.sigmoid ? std::vector<Attr>{} : std::vector<Attr>{{"axis", std::int64_t{-1}}});
    if (spec.sigmoid) {
      scores = choice;
      choice = g.op("Add", {choice, g.parameter("gate.e_score_correction_bias", {E}, Init::uniform(0.1))});
    }
    if (spec.groups > 1) {  // group-limited: experts outside the top_groups best groups score 0
      const std::int64_t G = spec.groups;
      std::string grouped = g.op("Reshape", {choice, g.ints({0, 0, G, E / G})});
      std::string best = g.op_n("TopK", {grouped, g.ints({spec.group_top})}, 2, {{"axis", std::int64_t{-1}}})[0];
      std::string group_scores = g.op("ReduceSum", {best, g.ints({-1})}, {{"keepdims", std::int64_t{0}}});  // [b, s, G]
      std::string kept_groups = g.op_n("TopK", {group_scores, g.ints({spec.top_groups})}, 2, {{"axis", std::int64_t{-1}}})[1];
      std::string kept = g.op("ReduceSum", {one_hot_of(kept_groups, G), g.ints({2})}, {{"keepdims", std::int64_t{0}}});
      grouped = g.op("Mul", {grouped, g.op("Unsqueeze", {kept, g.ints({-1})})});  // masked_fill(~mask, 0)
      choice = g.op("Reshape", {grouped, g.ints({0, 0, E})});
    }
    top = g.op_n("TopK", {choice, g.ints({k})}, 2, {{"axis", std::int64_t{-1}}});
    weights = top[0];
  }
  std::string one_hot = one_hot_of(top[1], E);  // [b,s,k,E]
  if (spec.sigmoid) {
    // The chosen experts' scores (without the bias); renormalized below, / (sum + 1e-20).
    weights = g.op("ReduceSum", {g.op("Mul", {one_hot, g.op("Unsqueeze", {scores, g.ints({2})})}), g.ints({-1})},
                   {{"keepdims", std::int64_t{0}}});
  }
  if (spec.norm_topk_prob && (spec.sigmoid || spec.groups > 1)) {
    std::string total = g.op("ReduceSum", {weights, g.ints({-1})}, {{"keepdims", std::int64_t{1}}});
    weights = g.op("Div", {weights, g.op("Add", {total, g.float_scalar(1e-20f)})});
  }
  if (spec.routed_scaling != 1.0) weights = g.op("Mul", {weights, g.float_scalar(static_cast<float>(spec.routed_scaling))});
  // Position of each (token, choice) in its expert's buffer: an exclusive running count over
  // the sequence in token-major order (token t's choices before token t+1's), so a token's
  // slot depends on earlier tokens only and the layer stays causal. One group = one sequence.
  std::string flat = g.op("Reshape", {one_hot, g.ints({0, -1, E})});  // [b, s*k, E]
  std::string before = g.op("CumSum", {flat, g.int_scalar(1)}, {{"exclusive", std::int64_t{1}}});
  std::string position = g.op("Reshape", {before, g.ints({0, -1, k, E})});  // [b, s, k, E]
  // Per (token, expert): routed or not, its position, its gate weight (experts are distinct
  // among a token's k choices, so each is a sum over k of at most one term).
  auto over_k = [&](const std::string& t) {
    return g.op("ReduceSum", {t, g.ints({2})}, {{"keepdims", std::int64_t{0}}});  // [b, s, E]
  };
  std::string routed = over_k(one_hot);
  std::string slot = over_k(g.op("Mul", {position, one_hot}));
  std::string gate = over_k(g.op("Mul", {one_hot, g.op("Unsqueeze", {weights, g.ints({-1})})}));
  // Capacity C = ceil(cf * k * seq / E) slots per expert and sequence: Range(0, num*seq, den)
  // has C elements, divided by den they number the slots 0..C-1.
  const auto [num, den] = capacity_ratio(spec.capacity_factor, k, E);
  std::string seq = g.op("Gather", {g.op("Shape", {x}), g.int_scalar(1)});
  std::string slots = g.op("Div", {g.op("Range", {g.int_scalar(0), g.op("Mul", {seq, g.int_scalar(num)}), g.int_scalar(den)}),
                                   g.int_scalar(den)});
  slots = g.op("Cast", {slots}, {{"to", std::int64_t{onnx::TensorProto::FLOAT}}});  // [C]
  // Dispatch mask and combine weights [b, s, E, C]: one-hot of the slot (a token beyond
  // capacity matches none: dropped), times routed / times the gate weight.
  std::string in_slot = g.op("Cast", {g.op("Equal", {g.op("Unsqueeze", {slot, g.ints({-1})}), slots})},
                             {{"to", std::int64_t{onnx::TensorProto::FLOAT}}});
  std::string dispatch = g.op("Mul", {in_slot, g.op("Unsqueeze", {routed, g.ints({-1})})});
  std::string combine = g.op("Mul", {in_slot, g.op("Unsqueeze", {gate, g.ints({-1})})});
  // Experts, stacked [E, in, out], on their C tokens each.
  const double bound_in = fan_in_bound(h), bound_out = fan_in_bound(spec.intermediate);
  auto einsum = [&](const char* equation, const std::string& a, const std::string& b) {
    return g.op("Einsum", {a, b}, {{"equation", std::string(equation)}});
  };
  if (spec.gpt_oss) {
    const std::int64_t I = spec.intermediate;
    std::string gate_up_w = g.parameter("experts.gate_up_proj", {E, h, 2 * I}, Init::uniform(bound_in));
    std::string gate_up_b = g.parameter("experts.gate_up_proj_bias", {E, 2 * I}, Init::uniform(bound_in));
    std::string down_w = g.parameter("experts.down_proj", {E, I, h}, Init::uniform(bound_out));
    std::string down_b = g.parameter("experts.down_proj_bias", {E, h}, Init::uniform(bound_out));
    std::string tokens = einsum("bsec,bsh->bech", dispatch, x);  // [b, E, C, h]
    std::string gate_up = g.op("Add", {einsum("bech,ehi->beci", tokens, gate_up_w), g.op("Unsqueeze", {gate_up_b, g.ints({1})})});
    // gate_up[..., ::2] and gate_up[..., 1::2]: the pairs (2i, 2i + 1) as [.., I, 2].
    std::string pairs = g.op("Reshape", {gate_up, g.ints({0, 0, 0, I, 2})});
    std::string gate_part = g.op("Gather", {pairs, g.int_scalar(0)}, {{"axis", std::int64_t{4}}});
    std::string up_part = g.op("Gather", {pairs, g.int_scalar(1)}, {{"axis", std::int64_t{4}}});
    if (spec.limit > 0) {
      const float limit = static_cast<float>(spec.limit);
      gate_part = g.op("Min", {gate_part, g.float_scalar(limit)});  // clamp(max=limit)
      up_part = g.op("Clip", {up_part, g.float_scalar(-limit), g.float_scalar(limit)});
    }
    std::string glu = g.op("Mul", {gate_part, g.op("Sigmoid", {g.op("Mul", {gate_part, g.float_scalar(static_cast<float>(spec.alpha))})})});
    std::string act = g.op("Mul", {g.op("Add", {up_part, g.float_scalar(1.0f)}), glu});
    std::string expert_out = g.op("Add", {einsum("beci,eih->bech", act, down_w), g.op("Unsqueeze", {down_b, g.ints({1})})});
    return einsum("bsec,bech->bsh", combine, expert_out);
  }
  std::string w1 = g.parameter("experts.w1", {E, h, spec.intermediate}, Init::uniform(bound_in));
  std::string w3 = g.parameter("experts.w3", {E, h, spec.intermediate}, Init::uniform(bound_in));
  std::string w2 = g.parameter("experts.w2", {E, spec.intermediate, h}, Init::uniform(bound_out));
  std::string tokens = einsum("bsec,bsh->bech", dispatch, x);  // [b, E, C, h]
  std::string act = g.op("Mul", {silu(g, einsum("bech,ehi->beci", tokens, w1)), einsum("bech,ehi->beci", tokens, w3)});
  std::string expert_out = einsum("beci,eih->bech", act, w2);  // [b, E, C, h]
  return einsum("bsec,bech->bsh", combine, expert_out);
}

}  // namespace symtensor::models
