// The model as torchtitan's llama3 sees it: a bundled flavor when every field matches one
// (models/llama3/__init__.py, v0.2.2), else a flavor of its own added by a module that the
// job imports at startup (experimental.custom_import), before the flavor is looked up.
#include <cmath>

#include <fmt/format.h>

#include "compiler/export/emitters.h"
#include "compiler/export/titan_flavor.h"

namespace symtensor::compiler {
namespace {

struct BundledFlavor {
  const char* name;
  long long dim, layers, heads, kv_heads, ffn;
};
// All with vocabulary 128256, norm_eps 1e-5 and rope_theta 500000.
constexpr BundledFlavor kFlavors[] = {{"8B", 4096, 32, 32, 8, 14336},
                                      {"70B", 8192, 80, 64, 8, 28672},
                                      {"405B", 16384, 126, 128, 8, 53248}};

// torchtitan's FFN width: int(2/3 of 4·dim), times ffn_dim_multiplier (int()), rounded up to
// multiple_of. multiple_of = F gives F whenever the first two steps give at most F.
std::string ffn_fields(long long dim, long long ffn) {
  const long long base = 8 * dim / 3;
  if (base <= ffn) return fmt::format("multiple_of={},\n    ffn_dim_multiplier=None,\n", ffn);
  return fmt::format("multiple_of={},\n    ffn_dim_multiplier={},\n", ffn,
                     static_cast<double>(ffn) / static_cast<double>(base));
}

}  // namespace

std::vector<std::string> titan_llama3_differences(const ModelArchitecture& m) {
  std::vector<std::string> d;
  if (m.norm != NormKind::rms_norm) d.push_back(fmt::format("normalization {}", m.norm == NormKind::layer_norm ? "LayerNorm" : "unknown"));
  if (m.position != PositionKind::rope) d.push_back(fmt::format("position embedding {}", megatron_name(m.position)));
  if (!m.gated_mlp || !m.silu) d.push_back("an MLP that is not SwiGLU");
  if (m.post_norm) d.push_back("post-norm layers (each norm after its residual add)");
  if (m.tied_embeddings) d.push_back("an LM head tied to the embedding");
  if (m.linear_bias || m.qkv_bias) d.push_back("linear biases");
  if (m.moe()) d.push_back(fmt::format("{} experts (top-{})", m.experts, m.top_k));
  return d;
}

std::string titan_flavor_name(const ModelArchitecture& m) {
  if (!titan_llama3_differences(m).empty() || m.vocab != 128256 || m.rotary_base != 500000 ||
      (m.norm_epsilon != 0 && std::abs(m.norm_epsilon - 1e-5) > 1e-9))
    return kTitanCustomFlavor;
  for (const auto& f : kFlavors)
    if (m.hidden == f.dim && m.layers == f.layers && m.heads == f.heads && m.query_groups == f.kv_heads && m.ffn_hidden == f.ffn)
      return f.name;
  return kTitanCustomFlavor;
}

std::string emit_torchtitan_flavor(const ExportContext& c) {
  const ModelArchitecture& m = c.arch;
  if (titan_flavor_name(m) != kTitanCustomFlavor) return "";
  std::string s = comment_block(c.header, "# ");
  s += fmt::format("# The model's architecture (read from the ONNX graph) as torchtitan llama3 flavor \"{}\".\n", kTitanCustomFlavor);
  s += fmt::format("# The job imports this module at startup ([experimental] custom_import = \"{}\"): put it on PYTHONPATH.\n",
                   kTitanFlavorModule);
  for (const auto& d : titan_llama3_differences(m))
    s += fmt::format("# PLACEHOLDER llama3 cannot build {}: this model needs a TrainSpec of its own\n", d);
  for (const auto& line : m.unknown) s += "# PLACEHOLDER " + line + "\n";
  if (m.rotary_base <= 0) s += "# PLACEHOLDER rope_theta: not in the graph; TransformerModelArgs' default applies\n";
  s += "from torchtitan.models.llama3 import llama3_args\n";
  s += "from torchtitan.models.llama3.model.args import TransformerModelArgs\n\n";
  s += fmt::format("llama3_args[\"{}\"] = TransformerModelArgs(\n", kTitanCustomFlavor);
  s += fmt::format("    dim={},\n    n_layers={},\n    n_heads={},\n    n_kv_heads={},\n    vocab_size={},\n", m.hidden, m.layers,
                   m.heads, m.query_groups > 0 ? m.query_groups : m.heads, m.vocab);
  s += "    " + ffn_fields(m.hidden, m.ffn_hidden);
  if (m.norm_epsilon > 0) s += fmt::format("    norm_eps={:g},\n", m.norm_epsilon);
  if (m.rotary_base > 0) s += fmt::format("    rope_theta={:g},\n", m.rotary_base);
  s += ")\n";
  return s;
}

}  // namespace symtensor::compiler
