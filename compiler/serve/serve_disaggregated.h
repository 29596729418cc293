#pragma once
// Disaggregated prefill/decode serving (issue #33): a prefill pool and a decode pool, each
// replicas of its own layout on the same cluster, and each request's KV cache sent from the
// prefill pool to the decode pool (simulator/serving/disaggregated.h). The transfer:
// every prefill GPU sends its shard of the prompt's KV cache, s * KV bytes per token per GPU,
// and every decode GPU receives its own, at the peer bandwidth of the link between the pools
// (inside a node when both pools fit in one, else the link between nodes) plus its latency.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "compiler/serve/serve_report.h"
#include "compiler/serve/serving_cost.h"

namespace symtensor::compiler {

struct KvTransferLink {
  std::string level;     // the topology level's name
  double bandwidth = 0;  // bytes/s per GPU per direction
  double latency_s = 0;
};

// The link between a prefill pool of `prefill_gpus` and a decode pool of `decode_gpus` placed
// one after the other: level 0 when together they fit in one of its groups (a node), else the
// outermost level. Throws one line when the cluster has fewer GPUs than both pools.
KvTransferLink kv_transfer_link(const hardware::Cluster& cluster, int prefill_gpus, int decode_gpus);

// Seconds to send the KV cache of a prompt of `tokens` from a replica of `prefill` to one of
// `decode`: max(s * KV_tok per prefill GPU, s * KV_tok per decode GPU) / bandwidth + latency.
double kv_transfer_seconds(const ServingCost& prefill, const ServingCost& decode, std::int64_t tokens,
                           const KvTransferLink& link);

ServeResult run_disaggregated(const ServingCost& prefill, const ServingCost& decode, const sim::ServingWorkload& workload,
                              const sim::ServingSlo& slo = {}, const sim::ServingProgress& progress = {});

std::string disaggregated_text(const ServingCost& prefill, const ServingCost& decode, const ServeResult& r);
nlohmann::json disaggregated_json(const ServingCost& prefill, const ServingCost& decode, const ServeResult& r);

}  // namespace symtensor::compiler
