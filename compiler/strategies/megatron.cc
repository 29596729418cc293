#include "compiler/strategies/megatron.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "compiler/strategies/propagation.h"
#include "compiler/analysis/transformer_structure.h"

namespace symtensor::compiler {

// Per node, what the layout rules look up of its loops (found with GiNaC, so once per
// graph rather than once per knob setting): the batch and sequence loops, and the
// numeric extents.
struct MegatronNodeLoops {
  bool known = false;
  int batch = -1, sequence = -1;
  std::vector<std::optional<double>> extents;
};

namespace {

std::string extent_text(const Graph& g, const GiNaC::ex& e) {
  if (auto v = numeric_extent(g, e)) return std::to_string(static_cast<long long>(*v));
  std::ostringstream os;
  os << e;
  return os.str();
}

class MegatronBuilder {
 public:
  MegatronBuilder(Graph& g, const hardware::Cluster& cluster, const MegatronKnobs& k, Plan& plan,
                  const std::vector<IterationSpace>& spaces, const TransformerStructure& structure,
                  const std::vector<NodeId>& order, PropagationCache& propagation, std::vector<MegatronNodeLoops>& loops)
      : g_(g), k_(k), plan_(plan), layout_(megatron_mesh(cluster, k)), spaces_(spaces), s_(structure), order_(order),
        propagation_(propagation), loops_(loops) {
    plan_.mesh_factors = layout_.factors;
    plan_.pipeline_axis = layout_.pipeline_axis;
    mesh_ = plan_mesh(plan_, cluster);
    const std::size_t n = g_.nodes().size();
    plan_.node_cuts.assign(n, NodeCut{});
    for (std::size_t i = 0; i < n; ++i) plan_.node_cuts[i].loop_axes.assign(spaces_[i].loops.size(), {});
    fixed_.assign(n, false);
  }

  void build() {
    if ((k_.tp > 1 || k_.pp > 1 || k_.sp) && s_.layers() == 0)
      throw std::runtime_error("megatron: no transformer layer (normalization -> attention) found in '" + g_.source + "'");
    const long long experts = expert_count(g_, spaces_, s_);
    if (k_.ep > 1 && experts == 0)
      throw std::runtime_error("megatron: ep=" + std::to_string(k_.ep) + " but '" + g_.source + "' has no expert layers");
    if (k_.ep > 1 && experts % k_.ep != 0)
      throw std::runtime_error("megatron: ep=" + std::to_string(k_.ep) + " does not divide the " + std::to_string(experts) +
                               " experts");
    const std::vector<int> tp = k_.tp > 1 ? std::vector<int>{layout_.tp_axis} : std::vector<int>{};
    for (NodeId n : s_.attention) {
      fix_batch(n);
      const int heads = attention_heads_loop(spaces_[n], batch_loop(n));
      if (!tp.empty() && heads < 0)
        throw std::runtime_error("megatron: attention operator '" + node_name(n) + "' has no heads loop to cut" +
                                 (spaces_[n].output_dims.size() == 1 && spaces_[n].output_dims[0].size() == 3
                                      ? " (its heads are merged with the batch in one dim, [batch*heads, seq, head_dim], "
                                        "in a layout the importer does not split, such as heads outer; tp cuts whole dims)"
                                      : ""));
      if (heads >= 0) set(n, heads, tp, "the attention heads");
    }
    for (NodeId n : s_.column) {
      if (!expert_layout(n)) fix_batch(n);
      if (!skips_tp(n)) set(n, gemm_output_loop(spaces_[n], weight_operand(g_, s_, n)), tp, "the output width (column-parallel)");
    }
    for (NodeId n : s_.row) {
      if (!expert_layout(n)) fix_batch(n);
      if (!skips_tp(n)) set(n, gemm_contraction_loop(spaces_[n]), tp, "the contraction (row-parallel)");
    }
    // Multi-head latent attention's down projections and their norms: whole on every
    // tensor-parallel rank (Megatron-Core's duplicated linear_q_down_proj/linear_kv_down_proj).
    for (const auto* nodes : {&s_.down_projections, &s_.latent_norms})
      for (NodeId n : *nodes) fix_batch(n);
    // Token dispatch and combine: the local tokens, as the attention part holds them.
    // Megatron-Core with etp=1 folds the tensor-parallel ranks into the expert group and keeps
    // the MoE layer's tokens sequence-parallel: each tp rank dispatches its own part of the
    // sequence. In the capacity form a rank's tokens fill its share of each expert's slots: the
    // capacity loop ([b, E, C, h]: the dispatch's output, the combine's expert input) over tp.
    const bool tokens_over_tp = !tp.empty() && k_.sp && expert_tp(k_) == 1;
    for (NodeId n = 0; n < static_cast<NodeId>(g_.nodes().size()); ++n) {
      if (spaces_[n].kind != OpKind::routing || g_.node(n).inputs.size() != 2) continue;
      fix_batch(n);
      if (!tokens_over_tp) continue;
      const bool dispatch = g_.node(n).op_type == "MoeDispatch";
      const std::vector<int>& slots = dispatch ? spaces_[n].output_dims.at(0) : spaces_[n].input_dims.at(1);
      if (slots.size() == 4 && slots[2] >= 0) set(n, slots[2], tp, "the expert capacity (sequence-parallel tokens)");
    }
    for (NodeId n : s_.vocab_heads) {
      fix_batch(n);
      set_vocabulary(n, gemm_output_loop(spaces_[n], weight_operand(g_, s_, n)), tp, "the vocabulary (parallel head)");
    }
    for (NodeId n : s_.embeddings) {
      fix_batch(n);
      const auto& data_dims = spaces_[n].input_dims.at(0);
      if (!data_dims.empty() && data_dims[0] >= 0) set_vocabulary(n, data_dims[0], tp, "the vocabulary (parallel embedding)");
      // A lookup along the vocabulary (Gather axis 0) has no vocabulary loop: split the table's
      // columns instead, the same memory per device as Megatron's vocabulary-parallel rows
      // (one all-gather of the looked-up rows where Megatron all-reduces partial sums).
      else if (data_dims.size() > 1 && data_dims.back() >= 0) set(n, data_dims.back(), tp, "the embedding's columns");
    }
    if (!tp.empty()) {
      std::vector<bool> residual_add(g_.nodes().size(), false);
      for (NodeId n : s_.residual_adds) residual_add[n] = true;
      for (NodeId n = 0; n < static_cast<NodeId>(g_.nodes().size()); ++n) {
        if (s_.norm_region[n] < 0 && !residual_add[n]) continue;  // outside the sequence region
        // Without sequence parallelism the residual stream and the norms are whole on every
        // tensor-parallel rank.
        fix_batch(n);
        if (!k_.sp) continue;
        const int seq = sequence_loop(n);
        // Context parallelism's axes stay major: a piece of the sequence per cp rank, cut
        // again over tp.
        std::vector<int> axes = layout_.cp_axes;
        axes.insert(axes.end(), tp.begin(), tp.end());
        if (seq >= 0) set(n, seq, axes, "the sequence (sequence parallelism)");
      }
    }
    propagate_cuts(g_, mesh_, plan_, fixed_, spaces_, &propagation_);
    plan_.stage_of_node = node_stages(g_, order_, s_, megatron_stage_layers(k_, s_.decoder_layers()));
  }

 private:
  std::string node_name(NodeId n) const { return g_.node(n).name; }
  const MegatronNodeLoops& loops(NodeId n) {
    loops_.resize(g_.nodes().size());
    MegatronNodeLoops& l = loops_[n];
    if (l.known) return l;
    l.known = true;
    l.batch = loop_with_symbol(g_, spaces_[n], g_.batch_dim);
    // The first loop over the sequence (an attention's queries), other than the batch's.
    const int s = loop_with_symbol(g_, spaces_[n], g_.sequence_dim);
    l.sequence = s == l.batch ? -1 : s;
    for (const LoopDim& loop : spaces_[n].loops) l.extents.push_back(numeric_extent(g_, loop.extent));
    return l;
  }
  int batch_loop(NodeId n) { return loops(n).batch; }
  int sequence_loop(NodeId n) { return loops(n).sequence; }

  // The batch over the data-parallel axes (`axes` when given: an expert GEMM's expert
  // data-parallel ones) and, under context parallelism, the sequence over the cp axes.
  void fix_batch(NodeId n, const std::vector<int>* axes = nullptr) {
    fixed_[n] = true;
    const std::vector<int>& dp = axes ? *axes : layout_.dp_axes;
    const int b = batch_loop(n);
    if (b >= 0 && !dp.empty()) set(n, b, dp, "the batch (data parallel)");
    const int s = sequence_loop(n);
    if (s >= 0 && !layout_.cp_axes.empty()) set(n, s, layout_.cp_axes, "the sequence (context parallel)");
  }

  // An expert GEMM: batch over the expert data-parallel axes, experts over the ep axes.
  // False for other GEMMs.
  bool expert_layout(NodeId n) {
    const int experts = gemm_expert_loop(spaces_[n], weight_operand(g_, s_, n));
    if (experts < 0) return false;
    fix_batch(n, &layout_.edp_axes);
    set(n, experts, layout_.ep_axes, "the experts (expert parallel)");
    return true;
  }

  // Expert GEMMs with etp = 1 are not cut over the tensor-parallel axis.
  bool skips_tp(NodeId n) const {
    return expert_tp(k_) == 1 && gemm_expert_loop(spaces_[n], weight_operand(g_, s_, n)) >= 0;
  }

  void set(NodeId n, int loop, const std::vector<int>& axes, const char* what) {
    fixed_[n] = true;
    if (axes.empty()) return;
    if (loop < 0) throw std::runtime_error("megatron: operator '" + node_name(n) + "' has no loop for " + what);
    const IterationSpace& space = spaces_[n];
    if (loop >= static_cast<int>(space.loops.size()) || !cut_allowed(g_.node(n), space, loop, loops(n).extents[loop], axes, mesh_)) {
      throw std::runtime_error("megatron: " + std::string(what) + " of '" + node_name(n) + "' (loop '" +
                               space.loops[loop].name + "' = " + extent_text(g_, space.loops[loop].extent) +
                               ") cannot be cut " + std::to_string(static_cast<long long>(ways_of(axes))) + " ways");
    }
    plan_.node_cuts[n].loop_axes[loop] = axes;
  }

  double ways_of(const std::vector<int>& axes) const {
    double ways = 1;
    for (int a : axes) ways *= mesh_.axes()[a].size;
    return ways;
  }

  // The vocabulary loop of the LM head or of an embedding lookup, cut over `axes` (tp). A
  // vocabulary they do not divide is padded as Megatron-LM pads it, to a multiple of
  // --make-vocab-size-divisible-by x tp (GPT-3's 50257 at tp=4: 50688), and so are the loops
  // over the same vocabulary dim of the operators around it (a tied head's Transpose of the
  // embedding, the logits' consumers), cut alike: the padded rows are priced as memory and
  // FLOPs. A vocabulary tp divides is cut as it is (set).
  void set_vocabulary(NodeId n, int loop, const std::vector<int>& axes, const char* what) {
    const double ways = ways_of(axes);
    const std::optional<double> extent =
        loop >= 0 && loop < static_cast<int>(spaces_[n].loops.size()) ? loops(n).extents[loop] : std::nullopt;
    if (axes.empty() || !extent || k_.vocab_div < 1 || (*extent >= ways && std::fmod(*extent, ways) == 0))
      return set(n, loop, axes, what);
    const long long vocab = static_cast<long long>(*extent);
    const long long padded = megatron_padded_vocabulary(vocab, k_.vocab_div, static_cast<int>(ways));
    if (!cut_allowed(g_.node(n), spaces_[n], loop, static_cast<double>(padded), axes, mesh_))
      return set(n, loop, axes, what);  // refused for another reason than the vocabulary's size: set says why
    fixed_[n] = true;
    plan_.node_cuts[n].loop_axes[loop] = axes;
    plan_.node_cuts[n].padded_extents[loop] = padded;
    pad_neighbours(n, loop, vocab, padded, axes);
  }

  // From node n's padded loop, along the tensor dims over it: each undecided neighbour whose
  // loop over that dim is the same vocabulary takes the padded extent and the shared
  // operand's cut (every dim of it), and is walked from in turn. A neighbour that cannot
  // cut the loop (a softmax over the vocabulary) is left to propagation.
  void pad_neighbours(NodeId from, int from_loop, long long vocab, long long padded, const std::vector<int>& axes) {
    std::vector<std::pair<NodeId, int>> work{{from, from_loop}};
    auto visit = [&](NodeId q, int q_loop, const std::vector<int>& q_dims, NodeId m, const std::vector<int>& m_dims) {
      if (q_loop < 0 || fixed_[q]) return;
      const auto& extent = loops(q).extents[q_loop];
      if (!extent || static_cast<long long>(*extent) != vocab ||
          !cut_allowed(g_.node(q), spaces_[q], q_loop, static_cast<double>(padded), axes, mesh_))
        return;
      NodeCut& cut = plan_.node_cuts[q];
      for (std::size_t d = 0; d < q_dims.size() && d < m_dims.size(); ++d)
        if (q_dims[d] >= 0 && m_dims[d] >= 0) cut.loop_axes[q_dims[d]] = plan_.node_cuts[m].loop_axes[m_dims[d]];
      cut.padded_extents[q_loop] = padded;
      fixed_[q] = true;
      work.emplace_back(q, q_loop);
    };
    while (!work.empty()) {
      const auto [m, loop] = work.back();
      work.pop_back();
      const Node& node = g_.node(m);
      const IterationSpace& space = spaces_[m];
      for (std::size_t i = 0; i < node.inputs.size() && i < space.input_dims.size(); ++i) {
        const TensorId t = node.inputs[i];
        const NodeId p = t == kNone ? kNone : g_.tensor(t).producer;
        if (p == kNone) continue;
        const auto& outs = g_.node(p).outputs;
        const std::size_t o = std::find(outs.begin(), outs.end(), t) - outs.begin();
        if (o >= spaces_[p].output_dims.size()) continue;
        const auto& dims = space.input_dims[i];
        for (std::size_t d = 0; d < dims.size() && d < spaces_[p].output_dims[o].size(); ++d)
          if (dims[d] == loop) visit(p, spaces_[p].output_dims[o][d], spaces_[p].output_dims[o], m, dims);
      }
      for (std::size_t o = 0; o < node.outputs.size() && o < space.output_dims.size(); ++o) {
        const TensorId t = node.outputs[o];
        if (t == kNone) continue;
        const auto& dims = space.output_dims[o];
        for (NodeId c : g_.tensor(t).consumers)
          for (std::size_t j = 0; j < g_.node(c).inputs.size() && j < spaces_[c].input_dims.size(); ++j) {
            if (g_.node(c).inputs[j] != t) continue;
            for (std::size_t d = 0; d < dims.size() && d < spaces_[c].input_dims[j].size(); ++d)
              if (dims[d] == loop) visit(c, spaces_[c].input_dims[j][d], spaces_[c].input_dims[j], m, dims);
          }
      }
    }
  }

  Graph& g_;
  const MegatronKnobs& k_;
  Plan& plan_;
  MegatronMesh layout_;
  hardware::DeviceMesh mesh_;
  const std::vector<IterationSpace>& spaces_;
  const TransformerStructure& s_;
  const std::vector<NodeId>& order_;
  PropagationCache& propagation_;
  std::vector<MegatronNodeLoops>& loops_;
  std::vector<bool> fixed_;
};

}  // namespace

long long expert_count(const Graph& graph, const std::vector<IterationSpace>& spaces, const TransformerStructure& s) {
  for (const auto* gemms : {&s.column, &s.row})
    for (NodeId n : *gemms) {
      const int loop = gemm_expert_loop(spaces[n], weight_operand(graph, s, n));
      if (loop < 0) continue;
      if (auto v = numeric_extent(graph, spaces[n].loops[loop].extent)) return static_cast<long long>(*v);
    }
  return 0;
}

struct MegatronLayouts::Facts {
  std::vector<IterationSpace> own_spaces;  // when the caller has none
  const std::vector<IterationSpace>* spaces = nullptr;
  TransformerStructure structure;
  std::vector<NodeId> order;
  PropagationCache propagation;
  std::vector<MegatronNodeLoops> loops;
};

MegatronLayouts::MegatronLayouts(Graph& graph) : graph_(graph), facts_(std::make_unique<Facts>()) {
  facts_->own_spaces = node_iteration_spaces(graph);
  init(facts_->own_spaces);
}

MegatronLayouts::MegatronLayouts(Graph& graph, const std::vector<IterationSpace>& spaces)
    : graph_(graph), facts_(std::make_unique<Facts>()) {
  init(spaces);
}

void MegatronLayouts::init(const std::vector<IterationSpace>& spaces) {
  facts_->spaces = &spaces;
  facts_->structure = find_transformer_structure(graph_, spaces);
  facts_->order = graph_.topological_order();
}

MegatronLayouts::~MegatronLayouts() = default;

const std::vector<IterationSpace>& MegatronLayouts::spaces() const { return *facts_->spaces; }
const TransformerStructure& MegatronLayouts::structure() const { return facts_->structure; }

Plan make_megatron_plan(Graph& graph, const hardware::Cluster& cluster, const MegatronKnobs& knobs,
                        const StrategyOptions& options) {
  return MegatronLayouts(graph).make(cluster, knobs, options);
}

Plan MegatronLayouts::make(const hardware::Cluster& cluster, const MegatronKnobs& knobs, const StrategyOptions& options) {
  Graph& graph = graph_;
  Plan plan = plan_skeleton("megatron", graph, cluster, options);
  const int dp = cluster.num_devices() / (knobs.tp * knobs.pp * knobs.cp);
  if (knobs.cp > 1) {
    // Megatron-Core splits each sequence into 2·cp chunks so that causal attention's work is
    // balanced (rank r takes chunks r and 2·cp-1-r).
    const double seq = bound_sequence_length(graph);
    if (seq <= 0)
      throw std::runtime_error("megatron: cp=" + std::to_string(knobs.cp) + " needs a bound sequence dim '" + graph.sequence_dim + "'");
    if (std::fmod(seq, 2.0 * knobs.cp) != 0)
      throw std::runtime_error("megatron: cp=" + std::to_string(knobs.cp) + " needs the sequence (" +
                               std::to_string(static_cast<long long>(seq)) + ") divisible by 2·cp = " +
                               std::to_string(2 * knobs.cp));
  }
  plan.virtual_stages = knobs.vp;
  plan.schedule = knobs.vp > 1 ? Schedule::interleaved_1f1b : Schedule::one_f_one_b;
  plan.recompute = knobs.recompute;
  if (knobs.offload > 0) {
    if (knobs.pp > 1)
      throw std::runtime_error("megatron: offload=" + std::to_string(knobs.offload) +
                               " needs pp=1 (Megatron-LM has no CPU offloading with pipeline parallelism)");
    if (knobs.recompute != RecomputePolicy::none)
      throw std::runtime_error("megatron: offload=" + std::to_string(knobs.offload) +
                               " with recompute: Megatron-LM offloads or recomputes activations, not both");
    if (cluster.device.host_link_bandwidth <= 0)
      throw std::runtime_error("megatron: offload=" + std::to_string(knobs.offload) + ": the profile '" + cluster.name +
                               "' states no host link (device.host_link_gb_per_s)");
    plan.offload_layers = knobs.offload;
  }
  if (knobs.dispatcher != MoeDispatcher::alltoall && knobs.ep == 1)
    throw std::runtime_error("megatron: dispatcher=" + std::string(to_string(knobs.dispatcher)) +
                             " needs ep > 1 (it exchanges tokens between expert-parallel ranks)");
  plan.moe_dispatcher = knobs.dispatcher;
  if (knobs.ep_overlap) {
    const auto refuse = [](const std::string& why) { throw std::runtime_error("megatron: ep_overlap=1 " + why); };
    if (knobs.ep == 1) refuse("needs ep > 1 (it overlaps the expert-parallel all-to-alls)");
    if (knobs.pp > 1 && knobs.vp == 1) refuse("with pp > 1 needs vp > 1 (Megatron-Core pairs virtual stages' passes)");
    if (knobs.recompute == RecomputePolicy::full) refuse("with recompute=full: Megatron-Core does not combine them");
    plan.moe_comm_overlap = true;
  }
  plan.distributed_optimizer = knobs.distopt || knobs.fsdp > 0;
  plan.zero_stage = knobs.fsdp;
  if (knobs.replicate > 1) {
    if (!plan.distributed_optimizer)
      throw std::runtime_error("megatron: replicate=" + std::to_string(knobs.replicate) +
                               " (HSDP) replicates sharded model states: give fsdp=2|3 or distopt=1");
    plan.replicate_axes = megatron_mesh(cluster, knobs).replicate_axes;
  }
  plan.sequence_parallel = knobs.sp && knobs.tp > 1;
  MegatronBuilder(graph, cluster, knobs, plan, *facts_->spaces, facts_->structure, facts_->order, facts_->propagation,
                  facts_->loops)
      .build();
  const double per_step = static_cast<double>(dp) * knobs.mb;
  if (std::fmod(plan.global_batch, per_step) != 0)
    throw std::runtime_error("megatron: batch " + std::to_string(static_cast<long long>(plan.global_batch)) +
                             " is not divisible by dp=" + std::to_string(dp) + " x mb=" + std::to_string(knobs.mb));
  plan.micro_batches = static_cast<int>(plan.global_batch / per_step);
  if (knobs.vp > 1 && knobs.pp > 1 && plan.micro_batches % knobs.pp != 0)
    throw std::runtime_error("megatron: the interleaved schedule needs micro-batches (" + std::to_string(plan.micro_batches) +
                             ") to be a multiple of pp=" + std::to_string(knobs.pp));
  return plan;
}

}  // namespace symtensor::compiler
