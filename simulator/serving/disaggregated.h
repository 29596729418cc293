#pragma once
// Disaggregated prefill and decode (issue #33; DistServe, Splitwise): a prefill pool computes
// each prompt and its first token, the request's KV cache is sent to a decode pool, and the
// decode pool generates the rest. Each pool is replicas of one replica's scheduler and step
// time (serving.h); the transfer time of a request is the compiler's (its link model).
#include <cstdint>
#include <functional>
#include <vector>

#include "simulator/serving/serving.h"

namespace symtensor::sim {

struct ServingPool {
  ServingScheduler scheduler;
  ServingStepTime step;
  int replicas = 1;
};

// Seconds to move the KV cache of a prompt of `input_tokens` from a prefill replica to a decode one.
using KvTransferTime = std::function<double(std::int64_t input_tokens)>;

// The run of `workload` (offline, Poisson or a trace; a closed loop is refused in one line):
// the prefill pool runs each request to its first token (round robin over its replicas), the
// KV cache then travels for transfer(input) seconds (the first token reaches the user after
// it: TTFT includes the transfer), and the decode pool, the requests arriving in the order
// their caches land, decodes the other output - 1 tokens with the prompt already cached. A
// record's replica is its decode replica; steps, preemptions and the peak batch are both pools'.
// The prefill pool frees a request's pages when its first token is out (not after the transfer).
ServingRun simulate_disaggregated(const ServingWorkload& workload, const ServingPool& prefill, const ServingPool& decode,
                                  const KvTransferTime& transfer, const ServingProgress& progress = {});

// A pool whose requests arrive with their prompt's KV cache (input_tokens of it): they need its
// pages, not its computation, and decode from their first step (serving.cc).
ServingRun simulate_decode_pool(const std::vector<ServingRequest>& transferred, const ServingScheduler& scheduler,
                                const ServingStepTime& step, int replicas);

}  // namespace symtensor::sim
