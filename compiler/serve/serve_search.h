#pragma once
// The layout search of `symtensor serve --rate R --slo-ttft T --slo-tpot P` (issue #33): over the
// tensor-parallel and pipeline degrees a replica may take on a cluster and the number of
// replicas, the fewest GPUs whose simulated serving of the rate meets the SLOs, and among the
// layouts that meet them the most goodput per GPU. It also tries disaggregated layouts (a
// prefill pool and a decode pool, each TP x replicas, the KV cache sent between them:
// serve_disaggregated.h) and answers aggregated or disaggregated, and why.
#include <optional>
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
  bool disaggregated = true;    // also search prefill/decode pools
};

struct ServeCandidate {
  ServingLayout layout;
  bool meets = false;           // at the fewest replicas tried that meet the SLOs
  double attainment = 0;        // at that layout
  double goodput_tokens_per_s = 0, output_tokens_per_s = 0;
  double ttft_p90_s = 0, tpot_p90_s = 0, ttft_p99_s = 0, tpot_p99_s = 0;
  std::string why;              // why a replica layout cannot run (does not fit, ...)
  double goodput_per_gpu() const { return layout.gpus() > 0 ? goodput_tokens_per_s / layout.gpus() : 0; }
};

// A disaggregated layout: a prefill pool of `prefill.replicas` replicas of tp=prefill.tp and a
// decode pool likewise (pp 1 each), at the fewest replicas found that meet the SLOs.
struct ServeDisaggregatedCandidate {
  ServingLayout prefill, decode;
  bool meets = false;
  double attainment = 0;                       // share of requests meeting both SLOs
  double ttft_share = 0, tpot_share = 0;       // meeting each alone
  double goodput_tokens_per_s = 0, output_tokens_per_s = 0;
  double ttft_p90_s = 0, tpot_p90_s = 0, ttft_p99_s = 0, tpot_p99_s = 0;
  double kv_transfer_s = 0;                    // one prompt's KV cache between the pools
  int prefill_bound = 0, decode_bound = 0;     // replicas each pool needs by its throughput bound at the rate
  int simulations = 0;
  std::string why;                             // why the pair cannot meet the SLOs (unset when it does)
  int gpus() const { return prefill.gpus() + decode.gpus(); }
  double goodput_per_gpu() const { return gpus() > 0 ? goodput_tokens_per_s / gpus() : 0; }
};

// The search's answer, whichever kind won.
struct ServeAnswer {
  bool disaggregated = false;
  std::string layout;                          // "tp=4 pp=1 x 2" or "prefill 2 x tp=2 + decode 1 x tp=4"
  int gpus = 0;
  double goodput_tokens_per_s = 0, output_tokens_per_s = 0, attainment = 0;
  double ttft_p90_s = 0, tpot_p90_s = 0;
};

struct ServeSearchResult {
  std::vector<ServeCandidate> candidates;  // one per replica layout (tp, pp), at its fewest replicas meeting the SLOs
  int fewest_gpus = -1;                    // index into candidates; -1 when none meets the SLOs on the cluster
  int best_goodput_per_gpu = -1;
  std::vector<ServeDisaggregatedCandidate> disaggregated;  // one per (prefill TP, decode TP)
  int fewest_disaggregated = -1;           // index into disaggregated, the same rule
  // The answer: the fewest GPUs that meet the SLOs, then the most goodput per GPU; aggregated
  // unless disaggregated needs fewer GPUs or gives more goodput per GPU on as many.
  bool disaggregated_chosen = false;
  std::string why;                         // the answer in a sentence with its reason
  bool found() const { return fewest_gpus >= 0 || fewest_disaggregated >= 0; }
};

// The chosen layout in brief; nullopt when none meets the SLOs.
std::optional<ServeAnswer> serve_answer(const ServeSearchResult& r);

// The disaggregated half of the search (serve_search_disaggregated.cc): every prefill TP and
// decode TP (powers of two within a node dividing the heads); each pool first sized by its
// throughput bound at the rate (prefill: whole prompts filling the token budget; decode: the
// largest batch the KV cache holds whose step meets the TPOT SLO), then simulated, the pool
// whose SLO is missed grown one replica at a time until both are met or the cluster is full.
std::vector<ServeDisaggregatedCandidate> search_disaggregated(const ServingModel& model, const ServingPrecision& precision,
                                                               const hardware::Cluster& cluster,
                                                               const hardware::ServingEngine& engine,
                                                               const ServeSearchOptions& options);

// Every replica layout tp x pp (tp a power of two dividing the heads, within a node; pp 1, 2, 4)
// with up to cluster.num_devices() / (tp pp) replicas; each simulated on one replica at its
// share of the rate (round robin), the replicas found by bisection.
ServeSearchResult search_serving(const ServingModel& model, const ServingPrecision& precision, const hardware::Cluster& cluster,
                                 const hardware::ServingEngine& engine, const ServeSearchOptions& options);

std::string serve_search_text(const ServeSearchResult& r, const hardware::Cluster& cluster, const ServeSearchOptions& o);

}  // namespace symtensor::compiler
