#pragma once
// What `symtensor serve` prints: the model and layout, the memory and KV cache of a replica,
// the step times that bound it, and the serving metrics of the simulated run (text or JSON).
#include <string>

#include <nlohmann/json.hpp>

#include "compiler/serve/serving_cost.h"
#include "simulator/serving/serving.h"

namespace symtensor::compiler {

struct ServeResult {
  sim::ServingRun run;
  sim::ServingMetrics metrics;
  sim::ServingSlo slo;
  std::string workload;  // "offline, 1000 requests of 1000 -> 1000 tokens"
};

// The run of `workload` on the layout's replicas, each step priced by `cost`.
ServeResult run_serving(const ServingCost& cost, const sim::ServingWorkload& workload, const sim::ServingSlo& slo = {},
                        const sim::ServingProgress& progress = {});
// "offline, 1000 requests of 1000 -> 1000 tokens".
std::string describe_workload(const sim::ServingWorkload& w);

std::string serve_text(const ServingCost& cost, const ServeResult& r);
// Keys: ttft_s, tpot_s, itl_s, e2e_s, output_tokens_per_s (means), *_p50/_p90/_p99 for each
// latency, total_tokens_per_s, output_tokens_per_s_per_gpu, requests_per_s, goodput_*, and
// "memory", "layout", "model", "engine" objects.
nlohmann::json serve_json(const ServingCost& cost, const ServeResult& r);
// The simulated run's part of both (latencies, throughput and goodput per GPU of `gpus`).
std::string serve_metrics_text(const ServeResult& r, int gpus);
nlohmann::json serve_metrics_json(const ServeResult& r, int gpus);

}  // namespace symtensor::compiler
