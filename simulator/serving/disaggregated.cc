// Disaggregated prefill and decode over two pools (disaggregated.h).
#include "simulator/serving/disaggregated.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace symtensor::sim {
namespace {

std::vector<ServingRequest> requests_of(const ServingWorkload& w) {
  switch (w.mode) {
    case ArrivalMode::trace: return w.trace;
    case ArrivalMode::poisson:
      if (!(w.rate > 0)) throw std::runtime_error("serve: --rate must be positive");
      return poisson_requests(w.rate, w.requests, w.input_tokens, w.output_tokens, w.seed);
    case ArrivalMode::offline: return std::vector<ServingRequest>(w.requests, ServingRequest{0, w.input_tokens, w.output_tokens});
    case ArrivalMode::closed_loop: break;
  }
  throw std::runtime_error("serve: --disaggregate takes --offline, --rate or --trace, not --concurrency");
}

}  // namespace

ServingRun simulate_disaggregated(const ServingWorkload& workload, const ServingPool& prefill, const ServingPool& decode,
                                  const KvTransferTime& transfer, const ServingProgress& progress) {
  const std::vector<ServingRequest> given = requests_of(workload);
  if (given.empty()) throw std::runtime_error("serve: no requests to simulate");
  // Prefill: each request to its first token.
  ServingWorkload first = workload;
  first.mode = ArrivalMode::trace;
  first.trace = given;
  for (ServingRequest& r : first.trace) r.output_tokens = 1;
  const ServingRun pre = simulate_serving(first, prefill.scheduler, prefill.step, prefill.replicas,
                                          progress ? [&progress](double x) { progress(0.5 * x); } : ServingProgress{});
  ServingRun run;
  run.requests = pre.requests;
  run.steps = pre.steps;
  run.peak_batch = pre.peak_batch;
  run.preemptions = pre.preemptions;
  // The caches land; the decode pool takes them in the order they land.
  std::vector<std::size_t> landing;
  for (std::size_t i = 0; i < run.requests.size(); ++i) {
    RequestRecord& r = run.requests[i];
    r.output_tokens = given[i].output_tokens;
    r.first_token_s = pre.requests[i].first_token_s + transfer(r.input_tokens);
    r.finish_s = r.first_token_s;
    if (r.output_tokens > 1) landing.push_back(i);
  }
  std::stable_sort(landing.begin(), landing.end(),
                   [&](std::size_t a, std::size_t b) { return run.requests[a].first_token_s < run.requests[b].first_token_s; });
  if (!landing.empty()) {
    std::vector<ServingRequest> sent;
    sent.reserve(landing.size());
    for (std::size_t i : landing)
      sent.push_back(ServingRequest{run.requests[i].first_token_s, run.requests[i].input_tokens, run.requests[i].output_tokens - 1});
    const ServingRun dec = simulate_decode_pool(sent, decode.scheduler, decode.step, decode.replicas);
    for (std::size_t k = 0; k < landing.size(); ++k) {
      RequestRecord& r = run.requests[landing[k]];
      const RequestRecord& d = dec.requests[k];
      run.inter_token_s.push_back(d.first_token_s - r.first_token_s);
      r.finish_s = d.finish_s;
      r.replica = d.replica;
      r.preemptions += d.preemptions;
    }
    run.inter_token_s.insert(run.inter_token_s.end(), dec.inter_token_s.begin(), dec.inter_token_s.end());
    run.steps += dec.steps;
    run.peak_batch = std::max(run.peak_batch, dec.peak_batch);
    run.preemptions += dec.preemptions;
  }
  if (progress) progress(1.0);
  return run;
}

}  // namespace symtensor::sim
