#include "onnx_models/presets.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

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
  if (full.experts > 0) c.experts = std::min<int64_t>(full.experts, 4);
  if (full.family == Family::vit) c.image_size = 32, c.patch_size = 8, c.classes = 10;
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
  s << family_name(c.family);
  if (c.family == Family::resnet) {
    s << ", blocks " << c.resnet_blocks[0] << "-" << c.resnet_blocks[1] << "-" << c.resnet_blocks[2] << "-"
      << c.resnet_blocks[3] << ", width " << c.resnet_width << ", image " << c.image_size << ", classes "
      << c.classes;
  } else {
    s << ", " << c.layers << " layers, hidden " << c.hidden << ", " << c.heads << " heads";
    if (c.kv_heads != c.heads) s << " (" << c.kv_heads << " kv)";
    s << ", mlp " << c.intermediate;
    if (c.experts > 0) {
      s << " x " << c.experts << " experts (top-" << c.top_k;
      if (c.capacity_factor != 1.0) s << ", capacity factor " << c.capacity_factor;
      s << ")";
    }
    if (c.family == Family::vit)
      s << ", image " << c.image_size << "/" << c.patch_size << ", classes " << c.classes;
    else
      s << ", vocab " << c.vocab << ", seq " << c.seq;
  }
  s << ", weights " << weights_name(c.weights);
  return s.str();
}

}  // namespace symtensor::models
