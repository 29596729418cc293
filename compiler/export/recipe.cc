#include "compiler/export/recipe.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "compiler/analysis/transformer_structure.h"
#include "compiler/strategies/propagation.h"

namespace symtensor::compiler {
namespace {

int ways_of(const std::vector<int>& axes, const hardware::DeviceMesh& mesh) {
  int w = 1;
  for (int a : axes) w *= mesh.axes()[a].size;
  return w;
}

std::vector<int> loop_axes(const Plan& plan, NodeId n, int loop) {
  if (loop < 0 || loop >= static_cast<int>(plan.node_cuts[n].loop_axes.size())) return {};
  return plan.node_cuts[n].loop_axes[loop];
}

int sequence_loop_of(const Graph& graph, const IterationSpace& space) {
  const int b = loop_with_symbol(graph, space, graph.batch_dim);
  const int s = loop_with_symbol(graph, space, graph.sequence_dim);
  return s == b ? -1 : s;
}

}  // namespace

bool ParallelRecipe::uneven_stages() const {
  return std::adjacent_find(layers_per_stage.begin(), layers_per_stage.end(), std::not_equal_to<>()) !=
         layers_per_stage.end();
}

bool ParallelRecipe::embedding_and_loss_as_layers() const {
  const int chunks = pp * std::max(vp, 1);
  if (pp <= 1 || layers <= 0 || layers_per_stage.size() != static_cast<std::size_t>(pp)) return false;
  if ((!uneven_stages() && layers % chunks == 0) || (layers + 2) % chunks != 0) return false;
  std::vector<int> accounted(pp, (layers + 2) / pp);
  accounted.front() -= 1, accounted.back() -= 1;
  return layers_per_stage == accounted;
}

std::pair<int, int> ParallelRecipe::first_last_layers() const {
  if (pp <= 1 || layers <= 0 || layers_per_stage.size() != static_cast<std::size_t>(pp)) return {0, 0};
  if (!uneven_stages() && layers % (pp * std::max(vp, 1)) == 0) return {0, 0};
  if (embedding_and_loss_as_layers()) return {0, 0};
  return {layers_per_stage.front(), layers_per_stage.back()};
}

int ParallelRecipe::recompute_num_layers() const {
  if (recompute_layers.empty()) return 1;
  const int most = *std::max_element(recompute_layers.begin(), recompute_layers.end());
  return (most + std::max(vp, 1) - 1) / std::max(vp, 1);
}

MegatronKnobs ParallelRecipe::knobs() const {
  MegatronKnobs k;
  k.tp = tp, k.pp = pp, k.cp = cp, k.dp = dp, k.mb = micro_batch_size, k.vp = vp;
  k.sp = sp, k.recompute = recompute, k.distopt = distopt;
  k.offload = offload_layers;
  k.ep = ep, k.etp = ep > 1 ? etp : 0;
  if (ep > 1) k.dispatcher = dispatcher, k.ep_overlap = moe_comm_overlap;
  k.fsdp = zero_stage >= 2 ? zero_stage : 0;
  k.replicate = dp_replicate;
  k.vocab_div = vocab_div;
  std::tie(k.first, k.last) = first_last_layers();
  return k;
}

ParallelRecipe recover_recipe(Graph& graph, const hardware::Cluster& cluster, const Plan& plan) {
  ParallelRecipe r;
  r.world = cluster.num_devices();
  r.gpus_per_node = cluster.levels.empty() ? 1 : cluster.levels.front().size;
  r.nodes = r.world / std::max(r.gpus_per_node, 1);
  r.pp = plan.pipeline_stages();
  r.vp = plan.virtual_stages;
  r.micro_batches = plan.micro_batches;
  r.global_batch = plan.global_batch;
  r.zero_stage = plan.zero_stage;
  if (!plan.stage_zero_stages.empty()) {
    // The frameworks shard the model states alike on every rank: the most any stage shards,
    // which keeps each stage within its memory.
    r.zero_stage = *std::max_element(plan.stage_zero_stages.begin(), plan.stage_zero_stages.end());
    if (r.zero_stage != plan.zero_stage)
      r.not_expressible.push_back(fmt::format("ZeRO stages {} per pipeline stage: the framework shards the model states "
                                              "alike on every rank; nearest: ZeRO-{} on every stage",
                                              fmt::join(plan.stage_zero_stages, "/"), r.zero_stage));
  }
  r.distopt = plan.distributed_optimizer;
  r.recompute = plan.recompute;
  r.recompute_layers = plan.recompute_layers;
  r.selective = cluster.stack.selective_recompute;
  r.dispatcher = plan.moe_dispatcher;
  r.moe_comm_overlap = plan.moe_comm_overlap;
  r.offload_layers = plan.offload_layers;
  r.schedule = plan.schedule;
  r.precision = plan.precision;
  if (const double seq = bound_sequence_length(graph); seq > 0) r.seq = seq;

  const std::vector<IterationSpace> spaces = node_iteration_spaces(graph);
  const TransformerStructure s = find_transformer_structure(graph, spaces);
  const hardware::DeviceMesh mesh = plan_mesh(plan, cluster);
  const auto name = [&](NodeId n) { return graph.node(n).name; };
  r.layers = s.decoder_layers();
  r.mtp_layers = s.prediction_layers();

  const auto column_width = [&](NodeId n) { return gemm_output_loop(spaces[n], weight_operand(graph, s, n)); };
  // Expert GEMMs have their own grid (ep x etp x edp over the tp x dp ranks): the dense
  // layers' degrees are read off the others.
  const auto expert_loop = [&](NodeId n) { return gemm_expert_loop(spaces[n], weight_operand(graph, s, n)); };
  std::vector<NodeId> dense_column, dense_row, expert_column, expert_row;
  for (NodeId n : s.column) (expert_loop(n) >= 0 ? expert_column : dense_column).push_back(n);
  for (NodeId n : s.row) (expert_loop(n) >= 0 ? expert_row : dense_row).push_back(n);
  r.experts = static_cast<int>(expert_count(graph, spaces, s));
  // The reference GEMM: a column-parallel one cut as most of them are (one odd operator
  // must not make the others look odd), else the first weight GEMM, else the first node
  // with a batch loop.
  NodeId ref = kNone;
  {
    std::map<std::pair<int, int>, int> votes;  // (width ways, batch ways) -> column GEMMs cut so
    const auto key = [&](NodeId n) {
      return std::pair(ways_of(loop_axes(plan, n, column_width(n)), mesh),
                       ways_of(loop_axes(plan, n, loop_with_symbol(graph, spaces[n], graph.batch_dim)), mesh));
    };
    for (NodeId n : dense_column) ++votes[key(n)];
    std::pair<int, int> best{};
    int most = 0;
    for (const auto& [k, v] : votes)
      if (v > most) most = v, best = k;
    for (NodeId n : dense_column)
      if (ref == kNone && key(n) == best) ref = n;
  }
  for (NodeId n = 0; ref == kNone && n < static_cast<NodeId>(graph.nodes().size()); ++n)
    if (s.weight_gemm[n]) ref = n;
  for (NodeId n = 0; ref == kNone && n < static_cast<NodeId>(graph.nodes().size()); ++n)
    if (loop_with_symbol(graph, spaces[n], graph.batch_dim) >= 0) ref = n;

  std::vector<int> tp_axes, dp_axes, cp_axes;
  if (ref != kNone) {
    if (!dense_column.empty()) tp_axes = loop_axes(plan, ref, column_width(ref));
    dp_axes = loop_axes(plan, ref, loop_with_symbol(graph, spaces[ref], graph.batch_dim));
    cp_axes = loop_axes(plan, ref, sequence_loop_of(graph, spaces[ref]));
  }
  r.tp_axes = tp_axes, r.dp_axes = dp_axes, r.cp_axes = cp_axes;
  r.tp = ways_of(tp_axes, mesh), r.dp = ways_of(dp_axes, mesh), r.cp = ways_of(cp_axes, mesh);

  // Every column GEMM cut as the reference, every row GEMM on its contraction as wide.
  for (NodeId n : dense_column) {
    const int w = ways_of(loop_axes(plan, n, column_width(n)), mesh);
    if (w != r.tp)
      r.not_expressible.push_back(fmt::format("{}: output width cut {} ways where the other layers use tp={}", name(n), w, r.tp));
    const int b = ways_of(loop_axes(plan, n, loop_with_symbol(graph, spaces[n], graph.batch_dim)), mesh);
    if (b != r.dp)
      r.not_expressible.push_back(fmt::format("{}: batch cut {} ways where the other layers use dp={}", name(n), b, r.dp));
  }
  for (NodeId n : dense_row) {
    const int w = ways_of(loop_axes(plan, n, gemm_contraction_loop(spaces[n])), mesh);
    if (w != r.tp)
      r.not_expressible.push_back(fmt::format("{}: contraction cut {} ways, not the row-parallel tp={}", name(n), w, r.tp));
  }
  // The padded vocabulary: the LM head's, as Megatron-LM pads it at this tp.
  if (!s.vocab_heads.empty()) {
    const NodeId head = s.vocab_heads.back();
    const int loop = column_width(head);
    const auto& padded = plan.node_cuts[head].padded_extents;
    if (const auto it = padded.find(loop); loop >= 0 && it != padded.end()) {
      const long long vocab = static_cast<long long>(numeric_extent(graph, spaces[head].loops[loop].extent).value_or(0));
      r.padded_vocab = it->second;
      if (const int div = megatron_vocab_divisor(vocab, r.padded_vocab, r.tp); div > 0) r.vocab_div = div;
      else
        r.not_expressible.push_back(fmt::format("{}: the vocabulary {} padded to {}, which Megatron-LM pads to no multiple of tp={}",
                                                name(head), vocab, r.padded_vocab, r.tp));
    }
  }
  // Expert GEMMs: ep from the first one's expert loop, etp from its width (column) or
  // contraction (row); every other one alike, etp 1 or tp, ep x etp folding over tp x dp.
  std::vector<int> ep_axes;
  bool expert_seen = false;
  for (const auto* gemms : {&expert_column, &expert_row})
    for (NodeId n : *gemms) {
      const int width = gemms == &expert_column ? column_width(n) : gemm_contraction_loop(spaces[n]);
      const int ep = ways_of(loop_axes(plan, n, expert_loop(n)), mesh), etp = ways_of(loop_axes(plan, n, width), mesh);
      if (!expert_seen) {
        expert_seen = true, r.ep = ep, r.etp = etp, ep_axes = loop_axes(plan, n, expert_loop(n));
      } else if (ep != r.ep || etp != r.etp) {
        r.not_expressible.push_back(fmt::format("{}: experts cut {} ways and width {} ways where the other expert GEMMs use ep={}, etp={}",
                                                name(n), ep, etp, r.ep, r.etp));
      }
    }
  if (expert_seen && r.ep > 1) {
    if (r.etp != 1 && r.etp != r.tp)
      r.not_expressible.push_back(fmt::format("expert tensor parallelism etp={}: Megatron allows 1 or tp={}", r.etp, r.tp));
    if ((r.tp * r.dp) % (r.ep * r.etp) != 0)
      r.not_expressible.push_back(fmt::format("ep={} x etp={} does not fold over tp={} x dp={}", r.ep, r.etp, r.tp, r.dp));
  }
  if (!expert_seen) r.etp = r.tp;
  // Sequence parallelism: a normalization's sequence cut over the tensor-parallel axes.
  r.sp = plan.sequence_parallel && r.tp > 1;
  for (NodeId n = 0; !r.sp && r.tp > 1 && n < static_cast<NodeId>(graph.nodes().size()); ++n) {
    if (s.norm_region[n] < 0) continue;
    for (int a : loop_axes(plan, n, sequence_loop_of(graph, spaces[n])))
      if (std::find(tp_axes.begin(), tp_axes.end(), a) != tp_axes.end()) r.sp = true;
  }
  // Axes that play no recipe role.
  for (int a = 0; a < static_cast<int>(mesh.axes().size()); ++a) {
    const auto has = [a](const std::vector<int>& v) { return std::find(v.begin(), v.end(), a) != v.end(); };
    if (a == plan.pipeline_axis || has(tp_axes) || has(dp_axes) || has(cp_axes) || has(ep_axes) || mesh.axes()[a].size == 1)
      continue;
    r.not_expressible.push_back(fmt::format("mesh axis {} (size {}) splits neither the batch, the sequence nor the "
                                            "layers' GEMM width: work replicated over it",
                                            mesh.axes()[a].name, mesh.axes()[a].size));
  }
  // HSDP's replicas: the outermost data-parallel axes, replicas of sharded states.
  if (!plan.replicate_axes.empty()) {
    const auto in_dp = [&](int a) { return std::find(dp_axes.begin(), dp_axes.end(), a) != dp_axes.end(); };
    bool leading = plan.replicate_axes.size() < dp_axes.size();
    for (std::size_t i = 0; i < plan.replicate_axes.size(); ++i)
      leading = leading && in_dp(plan.replicate_axes[i]) && dp_axes[i] == plan.replicate_axes[i];
    if (!leading)
      r.not_expressible.push_back(fmt::format("model states replicated over mesh axes {} that are not the outermost "
                                              "data-parallel ones (HSDP replicates across the outer ranks)",
                                              fmt::join(plan.replicate_axes, ",")));
    else if (r.zero_stage > 0 || plan.distributed_optimizer)  // r.zero_stage: the most any stage shards
      r.dp_replicate = ways_of(plan.replicate_axes, mesh);
  }
  const double per_rank = plan.global_batch / std::max(1, r.dp);
  const double mbs = per_rank / std::max(1, plan.micro_batches);
  r.micro_batch_size = static_cast<int>(std::llround(mbs));
  if (mbs != std::floor(mbs) || mbs < 1)
    r.not_expressible.push_back(fmt::format("micro-batch of {} samples (batch {} / dp {} / {} micro-batches) is not a whole number",
                                            mbs, plan.global_batch, r.dp, plan.micro_batches));

  r.layers_per_stage.assign(r.pp, 0);
  for (NodeId a : s.layer_anchors) {
    const int st = plan.stage_of_node.empty() ? 0 : plan.stage_of_node[a];
    if (std::count(s.prediction_anchors.begin(), s.prediction_anchors.end(), a)) {
      if (st != r.pp - 1)
        r.not_expressible.push_back(fmt::format("{}: a multi-token prediction layer on pipeline stage {} (Megatron-LM puts them on the last, {})",
                                                name(a), st, r.pp - 1));
      continue;
    }
    if (st >= 0 && st < r.pp) ++r.layers_per_stage[st];
  }
  if (r.pp > 2 && r.uneven_stages()) {
    const auto mid = r.layers_per_stage.begin() + 1, end = r.layers_per_stage.end() - 1;
    if (std::adjacent_find(mid, end, std::not_equal_to<>()) != end)
      r.not_expressible.push_back(fmt::format("layers per stage {}: only the first and last stage may differ",
                                              fmt::join(r.layers_per_stage, ",")));
  }
  return r;
}

}  // namespace symtensor::compiler
