#pragma once
// A discrete-event simulation of LLM serving on one or more model replicas: requests arrive
// (Poisson at a rate, a closed loop of K users, all at once, or a trace), each replica
// schedules them step by step as vLLM / TensorRT-LLM / SGLang do (continuous batching with a
// token budget per step, chunked prefill, a batch limit, a paged KV cache with queueing when
// it is full and preemption by recomputation), and each step takes the time the compiler's
// cost model gives for its batch (ServingStepTime): the simulator knows no model or GPU.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace symtensor::sim {

struct ServingRequest {
  double arrival_s = 0;
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
};

// The work of one step of a replica.
struct ServingBatch {
  std::int64_t prefill_tokens = 0;    // prompt tokens computed this step (whole prompts or chunks)
  // Query-key pairs of the prefill chunks' causal attention: per chunk of k tokens after c
  // computed ones, k * c + k * (k + 1) / 2.
  double prefill_attention_pairs = 0;
  std::int64_t prefill_context = 0;   // KV tokens the chunks read from earlier steps (sum of c)
  int prefill_requests = 0;
  int decode_requests = 0;            // one token each
  std::int64_t decode_context = 0;    // KV tokens the decoding requests read (sum of their contexts)
  std::int64_t tokens() const { return prefill_tokens + decode_requests; }
};

// Seconds one step of a replica takes for its batch.
using ServingStepTime = std::function<double(const ServingBatch&)>;

struct ServingScheduler {
  int max_batch = 256;                // requests in a step
  std::int64_t max_num_tokens = 8192; // tokens in a step
  bool chunked_prefill = true;
  bool reserve_whole_request = false; // admit only when prompt + output fit (no preemption)
  std::int64_t kv_blocks = 0;         // pages of the KV cache of one replica
  int block_size = 16;                // tokens per page
};

enum class ArrivalMode { poisson, closed_loop, offline, trace };

struct ServingWorkload {
  ArrivalMode mode = ArrivalMode::offline;
  double rate = 0;          // requests/s (poisson)
  int concurrency = 1;      // users (closed_loop): each sends its next request when one ends
  int requests = 1000;      // requests in all (not trace)
  std::int64_t input_tokens = 0, output_tokens = 0;
  std::uint64_t seed = 1;
  std::vector<ServingRequest> trace;  // trace: the requests as given
};

// What happened to one request.
struct RequestRecord {
  double arrival_s = 0, first_token_s = 0, finish_s = 0;
  std::int64_t input_tokens = 0, output_tokens = 0;
  int replica = 0;
  int preemptions = 0;
};

struct ServingRun {
  std::vector<RequestRecord> requests;  // in order of arrival
  std::vector<double> inter_token_s;    // every gap between two tokens of a request
  std::int64_t steps = 0;
  int peak_batch = 0;                   // most requests in one step of any replica
  std::int64_t preemptions = 0;
};

// Called now and then with the share of requests finished (progress on a terminal).
using ServingProgress = std::function<void(double)>;

// `replicas` copies of one replica share the requests (round robin in arrival order; a closed
// loop's users split among them). Deterministic for a given seed. Throws a one-line error when
// a request can never fit the KV cache.
ServingRun simulate_serving(const ServingWorkload& workload, const ServingScheduler& scheduler, const ServingStepTime& step,
                            int replicas = 1, const ServingProgress& progress = {});

// Poisson arrivals (exponential gaps at `rate`, seeded) of `count` requests of fixed lengths.
std::vector<ServingRequest> poisson_requests(double rate, int count, std::int64_t input, std::int64_t output,
                                             std::uint64_t seed);
// A trace: one request a line, "arrival_s,input_tokens,output_tokens" (blank lines and lines
// starting with '#' skipped; a header line naming the columns is allowed). Throws
// "FILE:LINE: problem" for a bad line; arrivals must not decrease.
std::vector<ServingRequest> read_request_trace(const std::string& path);

// Means and percentiles (nearest-rank) of a sample.
struct Distribution {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
  std::size_t count = 0;
};
Distribution distribution(std::vector<double> values);

struct ServingSlo {
  double ttft_s = 0, tpot_s = 0;  // 0: no limit
};

struct ServingMetrics {
  Distribution ttft, tpot, itl, e2e;
  double duration_s = 0;                     // first arrival to last finish
  double requests_per_s = 0, output_tokens_per_s = 0, total_tokens_per_s = 0;
  double goodput_requests_per_s = 0;         // requests meeting the SLOs, per second
  double goodput_output_tokens_per_s = 0;
  double slo_attainment = 1;                 // share of requests meeting the SLOs
};
// TPOT = (e2e - TTFT) / (output - 1), over requests of more than one output token.
ServingMetrics serving_metrics(const ServingRun& run, const ServingSlo& slo = {});

}  // namespace symtensor::sim
