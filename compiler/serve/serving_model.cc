#include "compiler/serve/serving_model.h"

#include <stdexcept>

#include <fmt/format.h>

#include "compiler/analysis/model_stats.h"
#include "compiler/export/model_architecture.h"

namespace symtensor::compiler {
namespace {

double number(const GiNaC::ex& e, const std::string& what, const std::string& name) {
  if (!GiNaC::is_a<GiNaC::numeric>(e))
    throw std::runtime_error(fmt::format("{}: {} is symbolic; serving needs every weight shape fixed", name, what));
  return GiNaC::ex_to<GiNaC::numeric>(e).to_double();
}

}  // namespace

double ServingModel::routed_expert_parameters() const {
  if (experts <= 0 || top_k <= 0 || top_k >= experts) return 0;
  // parameters - active = experts' total x (1 - top_k / experts)
  return (parameters - active_parameters) * static_cast<double>(experts) / static_cast<double>(experts - top_k);
}

ServingModel read_serving_model(Graph& graph, const std::string& name) {
  const ModelStats stats = compute_model_stats(graph);
  const ModelArchitecture a = read_model_architecture(graph, node_iteration_spaces(graph));
  ServingModel m;
  m.name = name;
  m.layers = a.layers;
  m.hidden = a.hidden;
  m.heads = a.heads;
  m.kv_heads = a.query_groups > 0 ? a.query_groups : a.heads;
  m.head_dim = a.head_dim > 0 ? a.head_dim : (a.heads > 0 ? a.hidden / a.heads : 0);
  m.vocab = a.vocab;
  m.ffn_hidden = a.ffn_hidden;
  if (a.mla) m.kv_latent = a.kv_lora_rank + a.qk_pos_head_dim;
  m.experts = a.experts;
  m.top_k = a.top_k;
  if (m.layers <= 0 || m.hidden <= 0 || m.heads <= 0 || (m.head_dim <= 0 && m.kv_latent <= 0))
    throw std::runtime_error(fmt::format("{}: not a decoder serving can price: found {} layers, hidden {}, {} heads "
                                         "(the graph's attention and layers were not recognized)",
                                         name, m.layers, m.hidden, m.heads));
  m.parameters = number(stats.parameter_count, "the parameter count", name);
  m.active_parameters = number(stats.active_parameter_count, "the active parameter count", name);
  if (!a.tied_embeddings && a.vocab > 0) m.embedding_parameters = static_cast<double>(a.vocab) * a.hidden;
  return m;
}

}  // namespace symtensor::compiler
