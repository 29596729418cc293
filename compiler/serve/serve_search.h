#pragma once
// The layout search of `symtensor serve --rate R --slo-ttft T --slo-tpot P` (issue #33): over the
// tensor-parallel and pipeline degrees a replica may take on a cluster and the number of
// replicas, the fewest GPUs whose simulated serving of the rate meets the SLOs, and among the
// layouts that meet them the most goodput per GPU.
#include <string>
#include <vector>

#include "compiler/serve/serving_cost.h"

namespace symtensor::compiler {

struct ServeSearchOptions {
  double rate = 0;              // requests/s, Poisson
  std::int64_t input_tokens = 0, output_tokens = 0;
  sim::ServingSlo slo;
  double attainment = 0.9;      // a layout meets the SLOs when this share of requests does
  int requests_per_replica = 200;
  std::uint64_t seed = 1;
};

struct ServeCandidate {
  ServingLayout layout;
  bool meets = false;           // at the fewest replicas tried that meet the SLOs
  double attainment = 0;        // at that layout
  double goodput_tokens_per_s = 0, output_tokens_per_s = 0;
  double ttft_p90_s = 0, tpot_p90_s = 0;
  std::string why;              // why a replica layout cannot run (does not fit, ...)
  double goodput_per_gpu() const { return layout.gpus() > 0 ? goodput_tokens_per_s / layout.gpus() : 0; }
};

struct ServeSearchResult {
  std::vector<ServeCandidate> candidates;  // one per replica layout (tp, pp), at its fewest replicas meeting the SLOs
  int fewest_gpus = -1;                    // index into candidates; -1 when none meets the SLOs on the cluster
  int best_goodput_per_gpu = -1;
};

// Every replica layout tp x pp (tp a power of two dividing the heads, within a node; pp 1, 2, 4)
// with up to cluster.num_devices() / (tp pp) replicas; each simulated on one replica at its
// share of the rate (round robin), the replicas found by bisection.
ServeSearchResult search_serving(const ServingModel& model, const ServingPrecision& precision, const hardware::Cluster& cluster,
                                 const hardware::ServingEngine& engine, const ServeSearchOptions& options);

std::string serve_search_text(const ServeSearchResult& r, const hardware::Cluster& cluster, const ServeSearchOptions& o);

}  // namespace symtensor::compiler
