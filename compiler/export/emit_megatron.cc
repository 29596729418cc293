// Megatron-LM's argument names (megatron/training/arguments.py), one flag per line:
//   torchrun ... pretrain_gpt.py $(grep -v '^#' megatron.args)
// Three parts: the model (read from the graph), the plan's parallelism and precision, and
// the least a benchmark launch on mock data needs. Comments stand on their own lines (a
// comment after a flag would reach argparse); PLACEHOLDER marks what neither the ONNX nor the
// plan says.
#include <fmt/format.h>

#include "compiler/export/emitters.h"

namespace symtensor::compiler {
namespace {

class MegatronArgs {
 public:
  void comment(std::string_view line) { s_ += fmt::format("# {}\n", line); }
  void flag(std::string_view name) { s_ += fmt::format("--{}\n", name); }
  template <typename T>
  void value(std::string_view name, const T& v) {
    s_ += fmt::format("--{} {}\n", name, v);
  }
  std::string& text() { return s_; }

 private:
  std::string s_;
};

// Multi-head latent attention (FRAMEWORKS.md 1b): the latent ranks and head dims read from the
// down projections, latent norms and attention; YaRN's factor and mscales from the graph's
// rotary table, softmax scale and cos/sin factor. Megatron-Core keeps the down projections
// and their norms (--qk-layernorm) whole on every tensor-parallel rank, as the plan does.
void mla_flags(MegatronArgs& a, const ModelArchitecture& m) {
  a.comment("multi-head latent attention (the interleaved rotary pairs of the HF weights are a fixed permutation: the same model)");
  a.flag("multi-latent-attention");
  if (m.q_lora_rank > 0) a.value("q-lora-rank", m.q_lora_rank);
  a.value("kv-lora-rank", m.kv_lora_rank);
  a.value("qk-head-dim", m.qk_head_dim);
  a.value("qk-pos-emb-head-dim", m.qk_pos_head_dim);
  a.value("v-head-dim", m.v_head_dim);
  a.value("rope-type", m.yarn ? "yarn" : "rope");
  if (m.yarn) {
    a.value("rotary-scaling-factor", fmt::format("{:g}", m.yarn_factor));
    a.value("mscale", fmt::format("{:g}", m.yarn_mscale));
    a.value("mscale-all-dim", fmt::format("{:g}", m.yarn_mscale_all_dim));
  }
}

// DeepSeek's routing and layer mix (FRAMEWORKS.md 1c), read from the router's ops and the
// layers' MLPs.
void moe_architecture_flags(MegatronArgs& a, const ModelArchitecture& m) {
  if (m.shared_expert_ffn > 0) a.value("moe-shared-expert-intermediate-size", m.shared_expert_ffn);
  if (m.dense_first_layers()) {
    a.comment("per layer: 0 a dense MLP of --ffn-hidden-size, 1 experts (one argument: no spaces)");
    a.value("moe-layer-freq", moe_layer_pattern(m.moe_layers));
  }
  if (m.router_score == RouterScore::sigmoid) a.value("moe-router-score-function", "sigmoid");
  if (m.router_score == RouterScore::pre_softmax) a.flag("moe-router-pre-softmax");
  if (m.expert_bias) a.flag("moe-router-enable-expert-bias");
  if (m.router_groups > 0 && m.router_group_topk > 0) {
    a.value("moe-router-num-groups", m.router_groups);
    a.value("moe-router-group-topk", m.router_group_topk);
  }
  if (m.router_scaling > 0) a.value("moe-router-topk-scaling-factor", fmt::format("{:g}", m.router_scaling));
}

void model_flags(MegatronArgs& a, const ModelArchitecture& m, const ParallelRecipe& r) {
  a.comment("model: read from the ONNX graph");
  for (const auto& line : m.unknown) a.comment("PLACEHOLDER " + line);
  a.value("num-layers", r.layers > 0 ? r.layers : m.layers);
  if (m.mtp_layers > 0) a.value("mtp-num-layers", m.mtp_layers);
  if (m.hidden > 0) a.value("hidden-size", m.hidden);
  if (m.ffn_hidden > 0) a.value("ffn-hidden-size", m.ffn_hidden);
  if (m.heads > 0) a.value("num-attention-heads", m.heads);
  if (m.grouped_query()) {
    a.flag("group-query-attention");
    a.value("num-query-groups", m.query_groups);
  }
  if (m.mla && m.v_head_dim > 0) a.value("kv-channels", m.v_head_dim);
  else if (m.head_dim > 0) a.value("kv-channels", m.head_dim);
  if (m.gated_mlp) {
    if (!m.silu) a.comment("PLACEHOLDER the gated MLP's activation is not x*sigmoid(x); --swiglu is SiLU");
    a.flag("swiglu");
  } else if (m.squared_relu) {
    a.flag("squared-relu");
  }
  if (m.norm != NormKind::unknown) a.value("normalization", megatron_name(m.norm));
  if (m.norm_1p) a.flag("apply-layernorm-1p");
  if (m.norm_epsilon > 0) a.value("norm-epsilon", fmt::format("{:g}", m.norm_epsilon));
  if (m.qk_norm) a.flag("qk-layernorm");
  if (m.position != PositionKind::unknown) a.value("position-embedding-type", megatron_name(m.position));
  if (m.position == PositionKind::rope && m.rotary_base > 0) a.value("rotary-base", static_cast<long long>(m.rotary_base));
  if (m.position == PositionKind::rope && m.rotary_percent > 0) a.value("rotary-percent", fmt::format("{:g}", m.rotary_percent));
  if (m.llama3_rope_factor > 0) {
    a.flag("use-rope-scaling");
    a.value("rope-scaling-factor", fmt::format("{:g}", m.llama3_rope_factor));
  }
  if (m.mla) mla_flags(a, m);
  const long long seq = static_cast<long long>(r.seq);
  if (const long long positions = std::max(m.max_positions, seq); positions > 0) a.value("max-position-embeddings", positions);
  if (!m.tied_embeddings) a.flag("untie-embeddings-and-output-weights");
  if (!m.linear_bias) a.flag("disable-bias-linear");
  if (!m.linear_bias && m.qkv_bias) a.flag("add-qkv-bias");
  if (!m.dropout) {
    a.comment("the graph has no Dropout");
    a.value("attention-dropout", "0.0");
    a.value("hidden-dropout", "0.0");
  }
  if (m.vocab > 0) {
    const long long padded = megatron_padded_vocabulary(m.vocab, r.vocab_div, r.tp);
    a.comment(fmt::format("vocabulary {} padded to {} (a multiple of {} x tp={}){}", m.vocab, padded, r.vocab_div, r.tp,
                          r.padded_vocab > 0 ? ", as the plan is priced"
                          : padded != m.vocab ? "; the plan is priced unpadded (tp divides the vocabulary)" : ""));
    a.value("make-vocab-size-divisible-by", r.vocab_div);
  }
  if (m.moe()) {
    a.value("num-experts", m.experts);
    if (m.top_k > 0) a.value("moe-router-topk", m.top_k);
    if (m.moe_ffn_hidden > 0) a.value("moe-ffn-hidden-size", m.moe_ffn_hidden);
    moe_architecture_flags(a, m);
    a.flag("moe-grouped-gemm");
    if (m.capacity_factor > 0) {
      a.comment("capacity routing as the graph has it (tokens past an expert's capacity dropped)");
      a.value("moe-expert-capacity-factor", fmt::format("{:g}", m.capacity_factor));
    }
    a.comment("PLACEHOLDER load-balancing loss: not in the ONNX");
    a.value("moe-router-load-balancing-type", "aux_loss");
    a.value("moe-aux-loss-coeff", "1e-2");
  }
}

// How Megatron-LM is told the plan's layers per stage, as megatron_stage_layers splits them:
// evenly over pp x vp chunks, else with the embedding and the loss counted as a layer each,
// else with the first and last stages' own counts.
void pipeline_split_flags(MegatronArgs& a, const ParallelRecipe& r) {
  if (r.pp <= 1) return;
  if (r.vp > 1) a.value("num-virtual-stages-per-pipeline-rank", r.vp);
  if (const auto [first, last] = r.first_last_layers(); first > 0) {
    a.value("decoder-first-pipeline-num-layers", first);
    a.value("decoder-last-pipeline-num-layers", last);
  } else if (r.embedding_and_loss_as_layers()) {
    a.flag("account-for-embedding-in-pipeline-split");
    a.flag("account-for-loss-in-pipeline-split");
  }
}

void parallel_flags(MegatronArgs& a, const ExportContext& c) {
  const ParallelRecipe& r = c.recipe;
  a.comment("parallelism and precision: the plan");
  a.value("tensor-model-parallel-size", r.tp);
  a.value("pipeline-model-parallel-size", r.pp);
  a.value("context-parallel-size", r.cp);
  if (r.cp > 1) a.value("cp-comm-type", c.plan.context_parallel_comm == ContextParallelComm::all_gather ? "allgather" : "p2p");
  if (r.sp && r.tp > 1) a.flag("sequence-parallel");
  if (r.experts > 0) {
    a.value("expert-model-parallel-size", r.ep);
    a.value("expert-tensor-parallel-size", r.etp);
    if (c.plan.moe_dispatcher == MoeDispatcher::alltoall) {
      a.comment("the token exchange priced: all-to-all dispatch into grouped expert GEMMs");
      a.value("moe-token-dispatcher-type", "alltoall");
    } else {
      a.comment("the token exchange priced: one copy of a token per remote node, fanned out over NVLink there");
      a.value("moe-token-dispatcher-type", "flex");
      a.value("moe-flex-dispatcher-backend", to_string(c.plan.moe_dispatcher));
    }
    if (c.plan.moe_comm_overlap) {
      a.comment("the expert all-to-alls priced beside the adjacent micro-batch's compute (combined 1F1B)");
      a.flag("overlap-moe-expert-parallel-comm");
    }
  }
  pipeline_split_flags(a, r);
  if (r.distopt || r.zero_stage == 1) a.flag("use-distributed-optimizer");
  if (r.zero_stage >= 2) {
    a.flag("use-megatron-fsdp");
    a.value("data-parallel-sharding-strategy", r.zero_stage == 2 ? "optim_grads" : "optim_grads_params");
    a.comment("Megatron-FSDP asserts on this checkpoint format");
    a.value("ckpt-format", "fsdp_dtensor");
  }
  if (r.dp > 1) a.flag("overlap-grad-reduce");
  if (r.recompute == RecomputePolicy::full) {
    a.value("recompute-granularity", "full");
    // block: the first N layers of each stage's chunk; uniform 1: every layer.
    a.value("recompute-method", r.recompute_layers.empty() ? "uniform" : "block");
    a.value("recompute-num-layers", r.recompute_num_layers());
  } else if (r.recompute == RecomputePolicy::selective) {
    a.value("recompute-granularity", "selective");
  }
  if (r.offload_layers > 0) {
    a.flag("cpu-offloading");
    a.value("cpu-offloading-num-layers", r.offload_layers);
  }
  a.value("micro-batch-size", r.micro_batch_size);
  a.value("global-batch-size", static_cast<long long>(r.global_batch));
  if (r.seq > 0) a.value("seq-length", static_cast<long long>(r.seq));
  else a.comment("PLACEHOLDER --seq-length: the plan binds no sequence length");
  if (const auto p = megatron_precision(r.precision); !p.empty()) a.flag(p);
  // The recipe priced (FRAMEWORKS.md 1d): per-tensor current scaling ("tensorwise") for fp8,
  // MXFP8 blocks on Blackwell, NVFP4 for fp4.
  if (r.precision == hardware::Precision::fp8) a.value("fp8-format", "hybrid"), a.value("fp8-recipe", "tensorwise");
  if (r.precision == hardware::Precision::mxfp8) a.value("fp8-format", "e4m3"), a.value("fp8-recipe", "mxfp8");
  if (r.precision == hardware::Precision::fp4) a.value("fp4-format", "e2m1"), a.value("fp4-recipe", "nvfp4");
}

void benchmark_flags(MegatronArgs& a, const ModelArchitecture& m) {
  a.comment("benchmark launch on mock data (FRAMEWORKS.md 1f)");
  a.comment("PLACEHOLDER tokenizer: the ONNX holds none; NullTokenizer over the model's vocabulary");
  a.comment("(Megatron-Core v0.15's NullTokenizer adds one token: the padded vocabulary may grow by a multiple)");
  a.flag("mock-data");
  a.value("tokenizer-type", "NullTokenizer");
  if (m.vocab > 0) a.value("vocab-size", m.vocab);
  else a.comment("PLACEHOLDER --vocab-size: the graph states no vocabulary");
  a.comment("PLACEHOLDER steps, learning-rate schedule and optimizer: not in the ONNX nor the plan");
  a.value("train-iters", 100);
  a.value("lr", "3e-4");
  a.value("min-lr", "3e-5");
  a.value("lr-decay-style", "cosine");
  a.value("lr-warmup-iters", 10);
  a.value("weight-decay", "0.1");
  a.value("clip-grad", "1.0");
  a.value("adam-beta1", "0.9");
  a.value("adam-beta2", "0.95");
  a.value("eval-iters", 0);
  a.value("eval-interval", 1000);
  a.value("log-interval", 1);
}

}  // namespace

std::string comment_block(const std::vector<std::string>& lines, std::string_view prefix) {
  std::string s;
  for (const auto& l : lines) s += fmt::format("{}{}\n", prefix, l);
  return s;
}

std::string_view megatron_precision(hardware::Precision p) {
  switch (p) {
    case hardware::Precision::bf16: return "bf16";
    case hardware::Precision::fp16: return "fp16";
    // Low-precision recipes run the linear GEMMs in FP8/FP4 beside bf16 training.
    case hardware::Precision::fp8: case hardware::Precision::mxfp8: case hardware::Precision::fp4: return "bf16";
    default: return "";
  }
}

std::string emit_megatron(const ExportContext& c) {
  const ParallelRecipe& r = c.recipe;
  MegatronArgs a;
  a.text() = comment_block(c.header, "# ");
  // Megatron asserts on one connection per device under TP/CP, except with Megatron-FSDP.
  const bool one_connection = (r.tp > 1 || r.cp > 1) && r.zero_stage < 2;
  a.comment(fmt::format("launch: {}torchrun --nnodes {} --nproc-per-node {} pretrain_gpt.py $(grep -v '^#' THIS_FILE)",
                        one_connection ? "CUDA_DEVICE_MAX_CONNECTIONS=1 " : "", r.nodes, r.gpus_per_node));
  model_flags(a, c.arch, r);
  parallel_flags(a, c);
  benchmark_flags(a, c.arch);
  return a.text();
}

}  // namespace symtensor::compiler
