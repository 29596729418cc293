#pragma once
// Megatron-best for a vision-language model as Megatron-LM runs it in 2026: MIMO, non-colocated
// (/work/shared/reference/FRAMEWORKS.md, "Multimodal models in Megatron"). The vision encoder
// and its projector run on GPUs of their own with their own Megatron plan (TP/DP/...), the
// language model on the rest with its own; the split of the GPUs is searched too. Both sides
// process the whole global batch each step; the encoder hands the projected image embeddings
// to the language model micro-batch by micro-batch (and takes their gradients back), so the
// step is set by the slower side, plus the pipeline fill between the two and the hand-off of
// one micro-batch each way (mimo_step_seconds).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/report/evaluate.h"
#include "compiler/report/results.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

inline constexpr const char* kMimoStrategy = "megatron-mimo";
// SymTensor's per-module placement: the same splits of the GPUs, each side planned by the
// SymTensor search on its own GPUs (its own cuts, recomputation and sharding) as well as by
// Megatron-best, the faster pair kept by mimo_step_seconds on the estimates; so, by the
// estimate, never slower than megatron-mimo.
inline constexpr const char* kSymtensorMimoStrategy = "symtensor-mimo";
bool is_mimo_strategy(const std::string& name);

// The graph cut where the modalities meet: `encoder` holds every node under a vision_tower or
// multi_modal_projector scope and their ancestors, `language` every other node (Constant nodes
// go to both). The tensors the encoder hands over are graph outputs of `encoder` and graph
// inputs of `language`; `boundary_elements` is their size at the bound dims (the whole global
// batch, one direction), handed over at the plan's activation bytes (activation_bytes).
struct ModalitySplit {
  Graph encoder, language;
  double boundary_elements = 0;
};
// nullopt when the graph has no node under those scopes (not a vision-language model).
std::optional<ModalitySplit> split_modalities(const Graph& graph);

// The two sides' step times on their own GPUs and how they meet.
struct MimoTimes {
  double encoder_s = 0, language_s = 0;
  int micro_batches = 1;  // the language model's micro-batches per step, the hand-off's unit
  double handoff_s = 0;   // the whole batch's embeddings over the links between the groups, one direction
};
// max(encoder, language, handoff) + min(encoder, language) / m + 2 * handoff / m: the slower
// side (or the links, when they are slower still; forward embeddings and backward gradients
// go opposite ways), plus the faster side's share of one micro-batch that cannot overlap
// (the first forward before the language model starts, or the last backward after it ends),
// plus one micro-batch's hand-off each way.
double mimo_step_seconds(const MimoTimes& t);

// One split of the cluster's GPUs between the two sides.
struct MimoSplitChoice {
  std::string where;                       // the encoder's GPUs: "1 GPU of each of 4 nodes" / "1 node of 8"
  std::string language_where = "the rest";  // the language model's
  hardware::Cluster encoder_cluster, language_cluster;
  double link_bytes_per_s = 0;  // aggregate bandwidth between the groups, per direction
};
// The splits tried: in each node g GPUs for the encoder and the rest for the language model
// (the hand-off over NVLink), and, on two nodes or more, k whole nodes for the encoder (over
// the NICs). On a mixed fleet, each group for the encoder and each other group for the
// language model (the hand-off over the link between the two groups; a third group idles).
// Throws on a cluster of more than two topology levels and on a fleet missing a link.
std::vector<MimoSplitChoice> mimo_splits(const hardware::Cluster& cluster);

// Each side's plans by candidate and GPUs, kept across mimo_search calls of one graph, cluster
// and options: compare's megatron-mimo and symtensor-mimo rows share their Megatron plans, and
// on a fleet of three groups or more a group's plan serves every split that puts that side on
// it (within one call too). A plan that failed or does not fit is kept as its error.
struct MimoSidePlans {
  struct Outcome {
    std::optional<EvaluatedPlan> plan;  // nullopt: `error`
    std::string error;
    int evaluations = 0;        // the side's search's
    double search_time_s = 0;   // its wall time
  };
  std::map<std::string, Outcome> by_key;  // side, candidate and GPUs (mimo_search)
};

struct MimoResult {
  MimoSplitChoice split;
  EvaluatedPlan encoder, language;  // each side's plan on its own GPUs
  MimoTimes times;
  double step_s = 0;
  int evaluations = 0;
  // The wall time of the side searches taken from `shared` (made by an earlier call): with
  // this call's own, what the search costs alone.
  double reused_search_s = 0;
  std::string label;
};
// `strategy` (kMimoStrategy or kSymtensorMimoStrategy)'s plans of each side on each split; the
// fastest split whose two sides fit. Throws (one line) when the graph is no vision-language
// model or no split fits.
// `shared`: plans of other calls to reuse and this call's to keep (same graph, cluster, options).
MimoResult mimo_search(const Graph& graph, const hardware::Cluster& cluster, const StrategyOptions& options,
                       const std::string& strategy = kMimoStrategy, MimoSidePlans* shared = nullptr);

// compare's row: the estimate from mimo_search, and with `simulate` each side of the chosen
// split simulated on its own GPUs and put together by mimo_step_seconds. The row's plan is the
// language side's (its knobs, for the report); the label names both sides and the split.
StrategyResult mimo_strategy_result(const Graph& graph, const hardware::Cluster& cluster,
                                    const StrategyOptions& options, bool simulate, double tokens_per_sample,
                                    const std::string& strategy = kMimoStrategy, MimoSidePlans* shared = nullptr);

}  // namespace symtensor::compiler
