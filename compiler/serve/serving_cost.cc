#include "compiler/serve/serving_cost.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "hardware/collectives.h"

namespace symtensor::compiler {

using hardware::Precision;

double serving_bytes(Precision p) {
  switch (p) {
    case Precision::fp32:
    case Precision::tf32: return 4;
    case Precision::fp16:
    case Precision::bf16: return 2;
    case Precision::fp8:
    case Precision::mxfp8: return 1;
    case Precision::fp4: return 0.5 + 1.0 / 16;
  }
  return 2;
}

double kv_bytes_per_token(const ServingModel& m, double kv_bytes) {
  if (m.kv_latent > 0) return static_cast<double>(m.layers) * m.kv_latent * kv_bytes;
  return 2.0 * m.layers * m.kv_heads * m.head_dim * kv_bytes;
}

double kv_bytes_per_token_per_gpu(const ServingModel& m, double kv_bytes, int tp, int pp) {
  const double layers = std::ceil(static_cast<double>(m.layers) / pp);
  if (m.kv_latent > 0) return layers * m.kv_latent * kv_bytes;
  const double heads = std::ceil(static_cast<double>(m.kv_heads) / tp);
  return 2.0 * layers * heads * m.head_dim * kv_bytes;
}

std::int64_t ServingMemory::batch_for(std::int64_t tokens, int block_size) const {
  const std::int64_t pages = (tokens + block_size - 1) / block_size;
  return pages > 0 ? kv_blocks / pages : 0;
}

ServingCost::ServingCost(ServingModel model, ServingLayout layout, ServingPrecision precision, hardware::Cluster cluster,
                         hardware::ServingEngine engine)
    : model_(std::move(model)), layout_(layout), precision_(precision), cluster_(std::move(cluster)),
      engine_(std::move(engine)) {
  const ServingLayout& l = layout_;
  if (l.tp < 1 || l.pp < 1 || l.ep < 1 || l.replicas < 1)
    throw std::runtime_error("serve: --tp, --pp, --ep and --replicas must be at least 1");
  if (cluster_.mixed()) throw std::runtime_error(fmt::format("serve: {} is a mixed fleet; serving plans one GPU type", cluster_.name));
  if (l.gpus() > cluster_.num_devices())
    throw std::runtime_error(fmt::format("serve: {} replicas of tp={} pp={} need {} GPUs; {} has {} (--nodes/--gpus)", l.replicas,
                                         l.tp, l.pp, l.gpus(), cluster_.name, cluster_.num_devices()));
  if (model_.heads % l.tp != 0)
    throw std::runtime_error(fmt::format("serve: --tp {} does not divide the model's {} attention heads", l.tp, model_.heads));
  if (l.pp > model_.layers)
    throw std::runtime_error(fmt::format("serve: --pp {} exceeds the model's {} layers", l.pp, model_.layers));
  if (l.ep > 1 && model_.experts == 0) throw std::runtime_error("serve: --ep needs a mixture-of-experts model");
  if (l.ep > 1 && (l.tp % l.ep != 0 || model_.experts % l.ep != 0))
    throw std::runtime_error(fmt::format("serve: --ep {} must divide --tp {} and the {} experts (experts are cut inside the "
                                         "tensor-parallel group, as TensorRT-LLM and SGLang do)", l.ep, l.tp, model_.experts));
  const hardware::Device& d = cluster_.device;
  try {
    peak_ = d.peak(hardware::peak_precision(precision_.weights));
  } catch (const std::exception&) {
    throw std::runtime_error(fmt::format("serve: {} has no {} rate (--precision)", d.name, hardware::to_string(precision_.weights)));
  }
  hbm_ = d.hbm_bandwidth;
  kernels_ = engine_.kernels_for(d.name);

  ServingMemory& m = memory_;
  m.capacity = d.memory_bytes;
  const double vocabulary = model_.vocabulary_parameters();
  m.weights = ((model_.parameters - vocabulary) * serving_bytes(precision_.weights) + vocabulary * vocabulary_bytes()) /
              (l.tp * l.pp);
  const double tokens = engine_.max_num_tokens;
  m.activations = tokens * (2.0 * model_.ffn_hidden / l.tp + 4.0 * model_.hidden) * 2 +
                  std::min<double>(engine_.max_batch, tokens) * model_.vocab / l.tp * 4;
  m.other = engine_.other_bytes;
  const double left = m.capacity - m.weights - m.activations - m.other;
  m.kv_cache = engine_.fraction_of_free ? engine_.memory_fraction * left
                                        : engine_.memory_fraction * m.capacity - m.weights - m.activations - m.other;
  if (m.kv_cache <= 0)
    throw std::runtime_error(fmt::format("serve: {} at tp={} pp={} does not fit {}: {:.1f} GB of weights and {:.1f} GB of "
                                         "buffers per GPU leave no memory for the KV cache (of {:.1f} GB)", model_.name, l.tp,
                                         l.pp, d.name, m.weights / 1e9, (m.activations + m.other) / 1e9, m.capacity / 1e9));
  m.kv_bytes_per_token = kv_bytes_per_token_per_gpu(model_, serving_bytes(precision_.kv), l.tp, l.pp);
  m.kv_blocks = static_cast<std::int64_t>(std::floor(m.kv_cache / (m.kv_bytes_per_token * engine_.block_size)));
  m.kv_tokens = m.kv_blocks * engine_.block_size;
}

double ServingCost::prefill_flops(double tokens, double attention_pairs) const {
  return 2.0 * model_.gemm_parameters() * tokens + 4.0 * model_.layers * model_.heads * model_.head_dim * attention_pairs;
}

double ServingCost::all_reduce_seconds(double bytes) const {
  if (layout_.tp <= 1 || bytes <= 0) return 0;
  const int per_node = cluster_.devices_per_node();
  hardware::GroupShape group;  // the TP ranks fill a node first
  group.ranks_per_level.assign(cluster_.levels.size(), 1);
  group.ranks_per_level[0] = std::min(layout_.tp, per_node);
  if (layout_.tp > per_node && group.ranks_per_level.size() > 1) group.ranks_per_level.back() = (layout_.tp + per_node - 1) / per_node;
  return hardware::collective_time(cluster_, hardware::Collective::all_reduce, group, bytes).seconds;
}

ServingCost::StepParts ServingCost::step_parts(const sim::ServingBatch& b) const {
  StepParts p;
  const ServingLayout& l = layout_;
  const double pp = l.pp;
  const double tokens = static_cast<double>(b.tokens());
  // The batch runs as m micro-batches, one per stage in flight (fewer when it holds fewer
  // requests): a step is one micro-batch's trip through the PP stages, L/PP layers each, while
  // the others fill the other stages. pp = 1: m = 1, the whole batch through the whole model.
  const double m = std::max(1.0, std::min<double>(pp, b.decode_requests + b.prefill_requests));
  const double micro = tokens / m;
  const double per_gpu = l.tp * m;  // GPUs a token's work spreads over in one step
  // Weights: each stage reads its own once per micro-batch (of the embedding table only the
  // tokens' rows; of the routed experts, those the micro-batch's tokens reach).
  const double head = model_.vocabulary_parameters() - model_.embedding_parameters;
  double read = model_.parameters - model_.embedding_parameters - head;
  if (const double experts = model_.routed_expert_parameters(); experts > 0) {
    const double reached = 1 - std::pow(1 - static_cast<double>(model_.top_k) / model_.experts, std::max(micro, 1.0));
    read += experts * (reached - 1);
  }
  const double bw = hbm_ * kernels_.hbm;
  p.weights_s = (read * serving_bytes(precision_.weights) + head * vocabulary_bytes()) / l.tp / bw;
  const double kv_tokens = static_cast<double>(b.decode_context + b.prefill_context) + tokens;
  p.kv_s = kv_tokens * memory_.kv_bytes_per_token * pp / m / bw;  // kv_bytes_per_token is one stage's layers
  p.gemm_compute_s = 2.0 * model_.gemm_parameters() *
                     (b.prefill_tokens / kernels_.prefill + b.decode_requests / kernels_.decode_compute) / (per_gpu * peak_);
  p.attention_compute_s = 4.0 * model_.layers * model_.heads * model_.head_dim * b.prefill_attention_pairs /
                          (per_gpu * peak_ * kernels_.prefill);
  // Two all-reduces of the micro-batch's activations per layer (Megatron's TP), in 16 bits.
  p.tp_comm_s = 2.0 * model_.layers * all_reduce_seconds(micro * model_.hidden * 2);
  if (l.pp > 1) {
    const int level = l.tp * l.pp <= cluster_.devices_per_node() ? 0 : static_cast<int>(cluster_.levels.size()) - 1;
    const hardware::TopologyLevel& link = cluster_.levels[level];
    p.pp_comm_s = (pp - 1) * (link.latency_s + micro * model_.hidden * 2 / link.peer_bandwidth());
  }
  p.overhead_s = engine_.step_overhead_s + model_.layers * engine_.layer_overhead_s;
  p.total_s = std::max(p.weights_s, p.gemm_compute_s) + std::max(p.kv_s, p.attention_compute_s) + p.tp_comm_s + p.pp_comm_s +
              p.overhead_s;
  return p;
}

double ServingCost::step_seconds(const sim::ServingBatch& batch) const { return step_parts(batch).total_s; }

sim::ServingScheduler ServingCost::scheduler() const {
  sim::ServingScheduler s;
  s.max_batch = engine_.max_batch;
  s.max_num_tokens = engine_.max_num_tokens;
  s.chunked_prefill = engine_.chunked_prefill;
  s.reserve_whole_request = engine_.reserve_whole_request;
  s.kv_blocks = memory_.kv_blocks;
  s.block_size = engine_.block_size;
  return s;
}

}  // namespace symtensor::compiler
