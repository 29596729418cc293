// `symtensor models list` and `symtensor models NAME [overrides] -o FILE.onnx`.
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "compiler/driver/commands.h"
#include "onnx_models/hf_config.h"
#include "onnx_models/model_config.h"
#include "onnx_models/model_zoo.h"

namespace symtensor::driver {

namespace {

struct ModelsOptions {
  std::string name;
  std::string hf_config;
  std::string output;
  std::optional<std::string> weights;
  models::Overrides overrides;
  bool names_only = false;
  bool decode_step = false;
};

void list_presets(bool names_only) {
  if (names_only) {
    for (const auto& name : models::preset_names()) std::cout << name << "\n";
    return;
  }
  for (const auto& p : models::presets()) {
    std::cout << std::left << std::setw(15) << p.name << " " << models::describe(p.config) << "\n"
              << std::setw(15) << "" << " source: " << p.source << "\n";
  }
  std::cout << "A family name (gpt, llama, bert, vit, resnet) stands for its first preset, to take overrides.\n"
               "`models --hf-config config.json -o F.onnx` writes a Hugging Face config's architecture (model_type\n"
               "llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, deepseek_v2, deepseek_v3, gpt_oss, gemma3_text,\n"
               "nemotron; others are refused, naming what is missing).\n"
               "Every NAME also exists as NAME-tiny: 2 layers, hidden 64, 4 heads, small vocabulary,\n"
               "random weights (ResNet: one block per stage, width 8), same structure otherwise.\n";
}

void write_model(const ModelsOptions& o) {
  if (!o.name.empty() && !o.hf_config.empty())
    throw std::runtime_error("models: give either a model NAME or --hf-config FILE, not both");
  if (o.name.empty() && o.hf_config.empty())
    throw std::runtime_error("models: give a model NAME (see `symtensor models list`) or --hf-config config.json");
  if (o.output.empty()) throw std::runtime_error("models: give the output file with -o FILE.onnx");
  models::Overrides overrides = o.overrides;
  if (o.weights) overrides.weights = models::parse_weights(*o.weights);
  const models::ModelConfig base = o.hf_config.empty() ? models::preset_config(o.name) : models::load_hf_config(o.hf_config);
  models::ModelConfig config = models::apply_overrides(base, overrides);
  config.decode_step = o.decode_step;
  onnx::ModelProto model = models::build_model(config);
  models::save_model(model, o.output);
  std::cout << "wrote " << o.output << ": " << models::describe(config)
            << (config.decode_step ? "; decode step (KV cache in and out)" : "") << "; "
            << models::count_parameters(model) << " parameters, " << model.graph().node_size() << " nodes, "
            << model.ByteSizeLong() << " bytes\n";
}

}  // namespace

void add_models_command(CLI::App& app) {
  auto o = std::make_shared<ModelsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "models", "Write a reference model (GPT, Llama 2/3, Mistral, Mixtral, Qwen2/2.5/3, Qwen3-MoE, Gemma 3, LLaVA, BERT, "
                "ViT, ResNet) "
                "or one from a Hugging Face config.json");
  CLI::App* list = cmd->add_subcommand("list", "List the model presets");
  list->add_flag("--names", o->names_only, "print only the accepted names, one a line");
  list->callback([o] { list_presets(o->names_only); });

  cmd->add_option("name", o->name, "preset name, e.g. gpt-1.7b or llama2-7b-tiny (see `models list`)");
  cmd->add_option("--hf-config", o->hf_config,
                  "a Hugging Face config.json (architecture fields only; no weights, no hub access) instead of NAME");
  cmd->add_option("-o,--output", o->output, "output .onnx file (written to a temporary name, then renamed)");
  auto& v = o->overrides;
  cmd->add_option("--layers", v.layers, "number of transformer layers");
  cmd->add_option("--hidden", v.hidden, "hidden size");
  cmd->add_option("--heads", v.heads, "attention heads");
  cmd->add_option("--kv-heads", v.kv_heads, "key/value heads (llama family; fewer than heads: GQA)");
  cmd->add_option("--intermediate", v.intermediate, "MLP width (default 4*hidden for gpt/bert/vit)");
  cmd->add_option("--vocab", v.vocab, "vocabulary size");
  cmd->add_option("--seq", v.seq, "maximum positions (learned position table / rotary range)");
  cmd->add_option("--experts", v.experts, "experts per MoE layer (llama family)");
  cmd->add_option("--top-k", v.top_k, "experts per token");
  cmd->add_option("--capacity-factor", v.capacity_factor,
                  "MoE expert capacity as a multiple of top_k * seq / experts tokens (default 1.0)");
  cmd->add_option("--image-size", v.image_size, "image side in pixels (vit, resnet)");
  cmd->add_option("--patch-size", v.patch_size, "patch side in pixels (vit)");
  cmd->add_option("--classes", v.classes, "output classes (vit, resnet)");
  cmd->add_option("--image-tiles", v.image_tiles,
                  "image tiles per image (llava-1.5-7b: 576 sequence positions each, any-resolution tiling)");
  cmd->add_option("--mtp", v.mtp_layers,
                  "llama family: N multi-token prediction layers (DeepSeek-V3's MTP, Megatron's --mtp-num-layers), "
                  "each a decoder layer with its own logits output");
  cmd->add_option("--weights", o->weights, "none (weights are shaped graph inputs) or random (initializers)");
  cmd->add_option("--seed", v.seed, "seed of the random weights");
  cmd->add_flag("--decode-step", o->decode_step,
                "llama family: the decode step with its KV cache (one token; past_key_<i>/past_value_<i> in, logits and "
                "present_key_<i>/present_value_<i> out), for `serve --onnx`");
  cmd->callback([o, list] {
    if (list->parsed()) return;
    write_model(*o);
  });
}

}  // namespace symtensor::driver
