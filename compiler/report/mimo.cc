#include "compiler/report/mimo.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/cost/kernel_precision.h"
#include "compiler/lowering/simulate_plan.h"

namespace symtensor::compiler {
namespace {

bool mimo_encoder_scope(const std::string& name) {
  return name.find("vision_tower/") != std::string::npos || name.find("multi_modal_projector/") != std::string::npos;
}

// The graph of the nodes `keep` marks (ids of `g`), in `order`. A tensor produced outside
// becomes a graph input (a constant when its value is known); one read outside, or an
// output of `g`, a graph output.
Graph mimo_sub_graph(const Graph& g, const std::vector<bool>& keep, const std::vector<NodeId>& order,
                     const std::string& suffix) {
  Graph h;
  h.name = g.name + suffix;
  h.source = g.source;
  h.metadata = g.metadata;
  h.symbols = g.symbols;
  h.batch_dim = g.batch_dim;
  h.sequence_dim = g.sequence_dim;
  std::map<TensorId, TensorId> mapped;
  auto bring = [&](TensorId t) -> TensorId {
    if (t == kNone) return kNone;
    if (auto it = mapped.find(t); it != mapped.end()) return it->second;
    const Tensor& src = g.tensor(t);
    Tensor c = src;
    c.producer = kNone;
    c.consumers.clear();
    c.is_graph_output = false;
    const bool from_outside = src.producer != kNone && !keep[src.producer];
    if (from_outside) {
      if (c.value) c.is_constant = true;
      else c.is_graph_input = true;
    }
    const TensorId id = h.add_tensor(std::move(c));
    if (h.tensor(id).is_graph_input && !h.tensor(id).is_parameter) h.inputs.push_back(id);
    mapped.emplace(t, id);
    return id;
  };
  std::vector<TensorId> produced;
  for (NodeId n : order) {
    if (!keep[n]) continue;
    Node node = g.node(n);
    for (TensorId& t : node.inputs) t = bring(t);
    for (TensorId& t : node.outputs) {
      const TensorId old = t;
      t = bring(t);
      if (t != kNone) produced.push_back(old);
    }
    h.add_node(std::move(node));
  }
  for (TensorId old : produced) {
    const Tensor& src = g.tensor(old);
    bool out = src.is_graph_output;
    for (NodeId c : src.consumers) out |= !keep[c];
    if (!out) continue;
    const TensorId id = mapped.at(old);
    h.tensor(id).is_graph_output = true;
    h.outputs.push_back(id);
  }
  return h;
}

std::string gpu_words(int n) { return fmt::format("{} GPU{}", n, n == 1 ? "" : "s"); }

}  // namespace

std::optional<ModalitySplit> split_modalities(const Graph& graph) {
  const std::vector<NodeId> order = graph.topological_order();
  const std::size_t n = graph.nodes().size();
  std::vector<bool> encoder(n, false);
  bool any = false;
  // Reverse order: a node is the encoder's when it is in its scopes or feeds a node that is.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& node = graph.node(*it);
    bool in = mimo_encoder_scope(node.name);
    any |= in;
    for (TensorId t : node.outputs)
      if (t != kNone)
        for (NodeId c : graph.tensor(t).consumers) in = in || encoder[c];
    encoder[*it] = in;
  }
  if (!any) return std::nullopt;
  std::vector<bool> language(n, false);
  for (std::size_t i = 0; i < n; ++i) language[i] = !encoder[i];
  ModalitySplit split{mimo_sub_graph(graph, encoder, order, "/encoder"), mimo_sub_graph(graph, language, order, "/language"), 0};
  // The hand-off: what encoder-only nodes produce and language-only nodes read.
  for (NodeId i : order) {
    if (!encoder[i] || language[i]) continue;
    for (TensorId t : graph.node(i).outputs) {
      if (t == kNone) continue;
      bool read = false;
      for (NodeId c : graph.tensor(t).consumers) read |= !encoder[c];
      if (!read) continue;
      const std::optional<double> elements = graph.symbols.evaluate(graph.tensor(t).num_elements());
      if (!elements)
        throw std::runtime_error("the MIMO split: tensor '" + graph.tensor(t).name + "' handed to the language model has unbound dims");
      split.boundary_elements += *elements;
    }
  }
  if (split.encoder.outputs.empty() || split.language.inputs.empty())
    throw std::runtime_error("the MIMO split: the vision tower hands nothing to the language model");
  return split;
}

double mimo_step_seconds(const MimoTimes& t) {
  const int m = std::max(1, t.micro_batches);
  return std::max({t.encoder_s, t.language_s, t.handoff_s}) + std::min(t.encoder_s, t.language_s) / m +
         2 * t.handoff_s / m;
}

std::vector<MimoSplitChoice> mimo_splits(const hardware::Cluster& cluster) {
  std::vector<MimoSplitChoice> out;
  if (cluster.mixed()) {
    const int groups = static_cast<int>(cluster.groups.size());
    auto group_words = [&](int g) {
      return fmt::format("the {} {} GPUs", cluster.groups[g].devices, cluster.groups[g].profile);
    };
    for (int e = 0; e < groups; ++e)
      for (int l = 0; l < groups; ++l) {
        if (e == l) continue;
        MimoSplitChoice c;
        c.where = group_words(e);
        c.language_where = group_words(l);
        c.encoder_cluster = hardware::group_cluster(cluster, e);
        c.language_cluster = hardware::group_cluster(cluster, l);
        const hardware::GroupLink* link = cluster.link_between(e, l);
        if (!link)
          throw std::runtime_error(fmt::format("the MIMO split: the fleet states no link between {} and {}",
                                               cluster.groups[e].profile, cluster.groups[l].profile));
        // Every GPU of the smaller group talks to one of the other's over its link.
        c.link_bytes_per_s =
            static_cast<double>(std::min(cluster.groups[e].devices, cluster.groups[l].devices)) * link->bandwidth;
        out.push_back(std::move(c));
      }
    return out;
  }
  if (cluster.levels.size() > 2)  // scale_cluster's nodes are the outermost level's members
    throw std::runtime_error("the MIMO split: a cluster of more than two topology levels is not split yet");
  const int per_node = cluster.devices_per_node();
  const int nodes = cluster.num_devices() / per_node;
  const hardware::TopologyLevel& inner = cluster.levels.front();
  for (int g = 1; g < per_node; ++g) {
    MimoSplitChoice c;
    c.where = fmt::format("{} of each of {} node{}", gpu_words(g), nodes, nodes == 1 ? "" : "s");
    c.encoder_cluster = hardware::scale_cluster(cluster, nodes, g);
    c.language_cluster = hardware::scale_cluster(cluster, nodes, per_node - g);
    // Each side's GPUs reach the other side's over the links between them (on a mesh only
    // those of each pair, group_bandwidth); the narrower side bounds the total.
    c.link_bytes_per_s = static_cast<double>(nodes) * std::min(g * inner.group_bandwidth(per_node - g + 1),
                                                               (per_node - g) * inner.group_bandwidth(g + 1));
    out.push_back(std::move(c));
  }
  if (cluster.levels.size() >= 2) {
    const hardware::TopologyLevel& outer = cluster.levels.back();
    for (int k = 1; k < nodes; ++k) {
      MimoSplitChoice c;
      c.where = fmt::format("{} node{} of {}", k, k == 1 ? "" : "s", nodes);
      c.encoder_cluster = hardware::scale_cluster(cluster, k, per_node);
      c.language_cluster = hardware::scale_cluster(cluster, nodes - k, per_node);
      c.link_bytes_per_s = static_cast<double>(std::min(k, nodes - k)) * per_node * outer.bandwidth;
      out.push_back(std::move(c));
    }
  }
  return out;
}

bool is_mimo_strategy(const std::string& name) { return name == kMimoStrategy || name == kSymtensorMimoStrategy; }

MimoResult mimo_search(const Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options,
                       const std::string& strategy, MimoSidePlans* shared) {
  if (!is_mimo_strategy(strategy)) throw std::logic_error("mimo_search: '" + strategy + "' is no MIMO strategy");
  std::optional<ModalitySplit> split = split_modalities(graph);
  if (!split)
    throw std::runtime_error(strategy + ": no vision tower (no node under a vision_tower or multi_modal_projector scope)");
  const bool symtensor = strategy == kSymtensorMimoStrategy;
  StrategyOptions so = options;
  so.megatron.clear();  // each side's best is searched
  // Each side's candidates: Megatron-best, and on the language side its best at one sample a
  // micro-batch (more micro-batches hide more of the encoder, mimo_step_seconds, which its own
  // step time alone does not see); symtensor-mimo adds the SymTensor search's plan of each side.
  struct Candidate {
    const char* strategy;
    const char* knobs;
  };
  std::vector<Candidate> encoder_candidates{{"megatron", ""}};
  std::vector<Candidate> language_candidates{{"megatron", ""}, {"megatron", "mb=1"}};
  if (symtensor) {
    encoder_candidates.push_back({"symtensor", ""});
    language_candidates.push_back({"symtensor", ""});
  }
  std::optional<MimoResult> best;
  int evaluations = 0;
  double reused_search_s = 0;
  std::set<std::string> counted;  // side plans this call has counted (a fleet's group serves several splits)
  std::string last_error = "no split of the GPUs";
  MimoSidePlans own;
  MimoSidePlans& plans = shared ? *shared : own;
  // The side's plan, nullopt (and last_error) when it cannot be made or does not fit. `gpus`
  // names the side's GPUs within the cluster: the same name, the same GPUs.
  auto plan_side = [&](const Candidate& c, Graph& side, const hardware::Cluster& on, const std::string& where,
                       const std::string& gpus, const char* what) -> std::optional<EvaluatedPlan> {
    const std::string key = std::string(what) + '\n' + c.strategy + '\n' + c.knobs + '\n' + gpus + '\n' + on.name +
                            '\n' + std::to_string(on.num_devices());
    auto [it, fresh] = plans.by_key.try_emplace(key);
    MimoSidePlans::Outcome& outcome = it->second;
    if (fresh) {
      StrategyOptions o = so;
      o.megatron = c.knobs;
      const auto t0 = std::chrono::steady_clock::now();
      try {
        EvaluatedPlan p = evaluate_strategy(c.strategy, side, on, o);
        outcome.evaluations = p.evaluations;
        if (p.estimate.fits) outcome.plan = std::move(p);
        else outcome.error = "the " + std::string(what) + " side does not fit";
      } catch (const std::exception& e) {
        outcome.error = std::string(what) + ": " + e.what();
      }
      outcome.search_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    // Each side plan's search counted once, made here or by a call before (then its time too).
    if (counted.insert(key).second) {
      evaluations += outcome.evaluations;
      if (!fresh) reused_search_s += outcome.search_time_s;
    }
    if (outcome.plan) return outcome.plan;
    last_error = where + ": " + outcome.error;
    return std::nullopt;
  };
  for (MimoSplitChoice& choice : mimo_splits(cluster)) {
    // mimo_step_seconds grows with the encoder's step: its fastest plan is the one. The
    // encoder's GPUs are named by `where`; the language model's by `language_where` on a
    // fleet (a group), else ("the rest") with `where` too.
    const std::string language_gpus = cluster.mixed() ? choice.language_where : choice.where + '\n' + choice.language_where;
    std::optional<EvaluatedPlan> encoder;
    for (const Candidate& c : encoder_candidates)
      if (auto p = plan_side(c, split->encoder, choice.encoder_cluster, choice.where, choice.where, "vision"))
        if (!encoder || p->estimate.step_time_s < encoder->estimate.step_time_s) encoder = std::move(p);
    if (!encoder) continue;
    for (const Candidate& c : language_candidates) {
      std::optional<EvaluatedPlan> language =
          plan_side(c, split->language, choice.language_cluster, choice.where, language_gpus, "language");
      if (!language) continue;
      MimoResult r;
      r.language = std::move(*language);
      r.encoder = *encoder;
      r.times = {encoder->estimate.step_time_s, r.language.estimate.step_time_s, r.language.plan.micro_batches,
                 split->boundary_elements * activation_bytes(options.precision) / choice.link_bytes_per_s};
      r.step_s = mimo_step_seconds(r.times);
      r.split = choice;
      if (!best || r.step_s < best->step_s) best = std::move(r);
    }
  }
  if (!best) throw std::runtime_error(strategy + ": no split fits (last: " + last_error + ")");
  best->evaluations = evaluations;
  best->reused_search_s = reused_search_s;
  best->label = fmt::format("{} vision on {} ({}), language on {} ({}){}", strategy, best->split.where,
                            best->encoder.label, best->split.language_where, best->language.label,
                            options.megatron.empty() ? "" : "; --megatron " + options.megatron + " not applied: each side searched");
  return *best;
}

StrategyResult mimo_strategy_result(const Graph& graph, const hardware::Cluster& cluster,
                                    const StrategyOptions& options, bool simulate, double tokens_per_sample,
                                    const std::string& strategy, MimoSidePlans* shared) {
  const auto t0 = std::chrono::steady_clock::now();
  MimoResult m = mimo_search(graph, cluster, options, strategy, shared);
  StrategyResult s;
  s.strategy = strategy;
  s.label = m.label;
  s.ok = true;
  // What the search costs alone: its own wall time and that of the side plans another row made.
  s.search_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() + m.reused_search_s;
  const double devices = cluster.num_devices();
  const auto precision = m.language.plan.precision;
  const double peak = hardware::total_peak(cluster, precision);
  const double peak_e = hardware::total_peak(m.split.encoder_cluster, precision);
  const double peak_l = hardware::total_peak(m.split.language_cluster, precision);
  const double batch = m.language.plan.global_batch;
  // MFU over every GPU (an idle group's too): each side's model FLOPs (mfu x its peak x its
  // step) over the whole step at the cluster's peak.
  auto combined_mfu = [&](double mfu_e, double t_e, double mfu_l, double t_l, double step) {
    return (mfu_e * peak_e * t_e + mfu_l * peak_l * t_l) / (peak * step);
  };
  const StepEstimate& ee = m.encoder.estimate;
  const StepEstimate& le = m.language.estimate;
  s.estimate = le;
  s.estimate.step_time_s = m.step_s;
  s.estimate.samples_per_s = batch / m.step_s;
  s.estimate.bubble_s = le.bubble_s + (m.step_s - le.step_time_s);  // the language side's, plus the wait on the other
  s.estimate.model_flops = ee.model_flops + le.model_flops;
  s.estimate.hardware_flops = ee.hardware_flops + le.hardware_flops;
  s.estimate.mfu = combined_mfu(ee.mfu, ee.step_time_s, le.mfu, le.step_time_s, m.step_s);
  s.estimate.hfu = combined_mfu(ee.hfu, ee.step_time_s, le.hfu, le.step_time_s, m.step_s);
  s.estimate.stage_peak_memory = ee.stage_peak_memory;
  s.estimate.stage_peak_memory.insert(s.estimate.stage_peak_memory.end(), le.stage_peak_memory.begin(),
                                      le.stage_peak_memory.end());
  // Each side's stages held against their own GPUs' memory (a mixed fleet's groups differ);
  // the row's peak and capacity are the tightest stage's.
  s.estimate.stage_memory_capacity.clear();
  for (std::size_t st = 0; st < ee.stage_peak_memory.size(); ++st) s.estimate.stage_memory_capacity.push_back(ee.stage_capacity(st));
  for (std::size_t st = 0; st < le.stage_peak_memory.size(); ++st) s.estimate.stage_memory_capacity.push_back(le.stage_capacity(st));
  s.estimate.fits = ee.fits && le.fits;
  const std::size_t tightest = s.tightest_stage();
  s.estimate.peak_memory = s.peak_memory_bytes();
  s.estimate.memory_capacity = s.memory_capacity_bytes = s.stage_capacity_bytes(tightest);
  s.estimate.mfu_6n.reset();
  s.plan = m.language.plan;
  s.plan->strategy = strategy;
  if (!simulate) return s;
  try {
    ModalitySplit split = *split_modalities(graph);
    const PlanSimulation pe = simulate_plan(split.encoder, m.encoder.plan, m.split.encoder_cluster);
    const PlanSimulation pl = simulate_plan(split.language, m.language.plan, m.split.language_cluster);
    MimoTimes t = m.times;
    t.encoder_s = pe.report.step_time_s, t.language_s = pl.report.step_time_s;
    const double step = mimo_step_seconds(t);
    SimulationReport r = pl.report;
    r.devices = static_cast<int>(devices);
    r.step_time_s = step;
    r.samples_per_s = batch / step;
    r.tokens_per_s = tokens_per_sample > 0 ? r.samples_per_s * tokens_per_sample : 0;
    r.model_flops = pe.report.model_flops + pl.report.model_flops;
    r.hardware_flops = pe.report.hardware_flops + pl.report.hardware_flops;
    r.mfu = combined_mfu(pe.report.mfu, t.encoder_s, pl.report.mfu, t.language_s, step);
    r.hfu = combined_mfu(pe.report.hfu, t.encoder_s, pl.report.hfu, t.language_s, step);
    r.mfu_6n.reset();
    r.fits = pe.report.fits && pl.report.fits;
    r.stages = pe.report.stages;
    for (auto& st : r.stages) st.name = "vision " + st.name;
    for (auto st : pl.report.stages) {
      st.name = "language " + st.name;
      r.stages.push_back(std::move(st));
    }
    r.bubble_s = pl.report.bubble_s + (step - t.language_s);
    s.simulation = std::move(r);
    s.simulated = true;
  } catch (const std::exception& e) {
    s.simulation_error = e.what();
  }
  return s;
}

}  // namespace symtensor::compiler
