// The serving simulation (simulator/serving/serving.h) on hand-made step times: token and
// request conservation, chunked prefill, the token budget, KV-cache queueing and preemption,
// queueing beyond capacity, Poisson determinism, traces and percentiles by hand.
#include <cmath>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "simulator/serving/serving.h"
#include "tests/temp_path.h"

namespace symtensor::sim {
namespace {

// A step: 10 ms plus 1 ms per 100 prefill tokens plus 0.1 ms per decode.
double serving_toy_step(const ServingBatch& b) { return 0.010 + 0.001 * b.prefill_tokens / 100.0 + 0.0001 * b.decode_requests; }

ServingScheduler serving_toy_scheduler() {
  ServingScheduler s;
  s.max_batch = 64;
  s.max_num_tokens = 2048;
  s.kv_blocks = 100000;
  s.block_size = 16;
  return s;
}

ServingWorkload serving_toy_workload(ArrivalMode mode, int requests, std::int64_t in, std::int64_t out) {
  ServingWorkload w;
  w.mode = mode;
  w.requests = requests;
  w.input_tokens = in;
  w.output_tokens = out;
  return w;
}

TEST(ServingSim, EveryRequestEndsWithItsTokensInOrder) {
  const ServingRun run = simulate_serving(serving_toy_workload(ArrivalMode::offline, 100, 300, 50), serving_toy_scheduler(), serving_toy_step);
  ASSERT_EQ(run.requests.size(), 100u);
  for (const RequestRecord& r : run.requests) {
    EXPECT_GT(r.first_token_s, r.arrival_s);
    EXPECT_GT(r.finish_s, r.first_token_s);
  }
  EXPECT_EQ(run.inter_token_s.size(), 100u * 49);  // output - 1 gaps each
  EXPECT_LE(run.peak_batch, 64);
  EXPECT_EQ(run.preemptions, 0);
}

TEST(ServingSim, ChunkedPrefillSplitsALongPromptOverTheTokenBudget) {
  // One prompt of 5000 tokens, budget 2048: chunks of 2048, 2048, 904, then the first token.
  // TTFT by hand: 3 steps of 10 ms + 1 ms per 100 tokens = 30 ms + 50 ms.
  ServingRun run = simulate_serving(serving_toy_workload(ArrivalMode::offline, 1, 5000, 3), serving_toy_scheduler(), serving_toy_step);
  EXPECT_EQ(run.steps, 3 + 2);
  EXPECT_NEAR(run.requests[0].first_token_s, 0.030 + 0.050, 1e-12);
  // Each decode: 10 ms + 0.1 ms.
  EXPECT_NEAR(run.requests[0].finish_s - run.requests[0].first_token_s, 2 * 0.0101, 1e-12);
  // Without chunking the whole prompt runs in one step of an empty batch.
  ServingScheduler whole = serving_toy_scheduler();
  whole.chunked_prefill = false;
  run = simulate_serving(serving_toy_workload(ArrivalMode::offline, 1, 5000, 3), whole, serving_toy_step);
  EXPECT_NEAR(run.requests[0].first_token_s, 0.010 + 0.050, 1e-12);
}

TEST(ServingSim, FullKvCacheQueuesOrPreempts) {
  // 40 pages of 16 tokens = 640 tokens; requests of 100 + 100 tokens need 13 pages at the end.
  ServingScheduler s = serving_toy_scheduler();
  s.kv_blocks = 40;
  ServingRun paged = simulate_serving(serving_toy_workload(ArrivalMode::offline, 20, 100, 100), s, serving_toy_step);
  EXPECT_GT(paged.preemptions, 0);  // admitted on their prompts, they outgrow the cache
  for (const RequestRecord& r : paged.requests) EXPECT_GT(r.finish_s, 0);
  // Reserving whole requests: at most floor(40 / 13) = 3 at once and never a preemption.
  s.reserve_whole_request = true;
  ServingRun reserved = simulate_serving(serving_toy_workload(ArrivalMode::offline, 20, 100, 100), s, serving_toy_step);
  EXPECT_EQ(reserved.preemptions, 0);
  EXPECT_EQ(reserved.peak_batch, 3);
  // A request that can never fit is refused in one line.
  s.kv_blocks = 5;
  try {
    simulate_serving(serving_toy_workload(ArrivalMode::offline, 1, 100, 100), s, serving_toy_step);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("needs 13 KV-cache pages; a replica holds 5"), std::string::npos) << e.what();
  }
}

TEST(ServingSim, BeyondCapacityTtftGrowsWhileThroughputPlateaus) {
  // Capacity of this replica, offline: the throughput it reaches with every request waiting.
  const ServingScheduler s = serving_toy_scheduler();
  const ServingMetrics offline = serving_metrics(simulate_serving(serving_toy_workload(ArrivalMode::offline, 400, 200, 100), s, serving_toy_step));
  const double capacity_rps = offline.requests_per_s;
  ServingWorkload w = serving_toy_workload(ArrivalMode::poisson, 200, 200, 100);
  w.rate = 3 * capacity_rps;
  const ServingMetrics few = serving_metrics(simulate_serving(w, s, serving_toy_step));
  w.requests = 800;
  const ServingMetrics many = serving_metrics(simulate_serving(w, s, serving_toy_step));
  EXPECT_GT(many.ttft.mean, 3 * few.ttft.mean);  // the queue grows with every request
  EXPECT_NEAR(many.requests_per_s / capacity_rps, 1, 0.1);
  EXPECT_NEAR(few.requests_per_s / capacity_rps, 1, 0.2);
  // Below capacity the queue stays short: TTFT does not grow with the requests.
  w.rate = 0.3 * capacity_rps;
  w.requests = 200;
  const double low_few = serving_metrics(simulate_serving(w, s, serving_toy_step)).ttft.mean;
  w.requests = 800;
  const double low_many = serving_metrics(simulate_serving(w, s, serving_toy_step)).ttft.mean;
  EXPECT_LT(low_many, 2 * low_few);
}

TEST(ServingSim, ClosedLoopOfOneDecodesAtTheBatchOneStep) {
  ServingWorkload w = serving_toy_workload(ArrivalMode::closed_loop, 5, 100, 20);
  w.concurrency = 1;
  const ServingRun run = simulate_serving(w, serving_toy_scheduler(), serving_toy_step);
  const ServingMetrics m = serving_metrics(run);
  EXPECT_NEAR(m.tpot.mean, 0.0101, 1e-12);  // one decode alone: 10 ms + 0.1 ms
  EXPECT_NEAR(m.ttft.mean, 0.011, 1e-12);   // the prompt alone: 10 ms + 1 ms
  for (std::size_t i = 1; i < run.requests.size(); ++i)
    EXPECT_DOUBLE_EQ(run.requests[i].arrival_s, run.requests[i - 1].finish_s);
}

TEST(ServingSim, ReplicasShareTheRequests) {
  const ServingWorkload w = serving_toy_workload(ArrivalMode::offline, 200, 200, 100);
  const double one = serving_metrics(simulate_serving(w, serving_toy_scheduler(), serving_toy_step, 1)).output_tokens_per_s;
  const ServingRun two = simulate_serving(w, serving_toy_scheduler(), serving_toy_step, 2);
  EXPECT_NEAR(serving_metrics(two).output_tokens_per_s / one, 2, 0.1);
  int on_second = 0;
  for (const RequestRecord& r : two.requests) on_second += r.replica;
  EXPECT_EQ(on_second, 100);
}

TEST(ServingSim, PoissonArrivalsAreSeeded) {
  const auto a = poisson_requests(5, 1000, 10, 10, 7), b = poisson_requests(5, 1000, 10, 10, 7), c = poisson_requests(5, 1000, 10, 10, 8);
  EXPECT_EQ(a.back().arrival_s, b.back().arrival_s);
  EXPECT_NE(a.back().arrival_s, c.back().arrival_s);
  EXPECT_NEAR(a.back().arrival_s / 999, 1.0 / 5, 0.02);  // mean gap 1/rate
}

TEST(ServingSim, PercentilesByHand) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  const Distribution d = distribution(v);
  EXPECT_DOUBLE_EQ(d.mean, 50.5);
  EXPECT_DOUBLE_EQ(d.p50, 50);
  EXPECT_DOUBLE_EQ(d.p90, 90);
  EXPECT_DOUBLE_EQ(d.p99, 99);
}

TEST(ServingSim, TpotAndGoodputAsNamed) {
  ServingRun run;
  run.requests.push_back({0, 0.5, 2.5, 10, 5, 0, 0});   // TTFT 0.5, TPOT (2.5 - 0.5) / 4 = 0.5
  run.requests.push_back({1, 1.1, 1.5, 10, 5, 0, 0});   // TTFT 0.1, TPOT 0.1
  const ServingMetrics m = serving_metrics(run, ServingSlo{0.2, 0.2});
  EXPECT_DOUBLE_EQ(m.tpot.mean, 0.3);
  EXPECT_DOUBLE_EQ(m.ttft.mean, 0.3);
  EXPECT_DOUBLE_EQ(m.duration_s, 2.5);
  EXPECT_DOUBLE_EQ(m.output_tokens_per_s, 10 / 2.5);
  EXPECT_DOUBLE_EQ(m.goodput_output_tokens_per_s, 5 / 2.5);
  EXPECT_DOUBLE_EQ(m.slo_attainment, 0.5);
}

TEST(ServingSim, TraceFileAndItsErrors) {
  const std::string path = symtensor::testing::temp_path("serving_trace.csv");
  std::ofstream(path) << "arrival_s,input_tokens,output_tokens\n0,100,10\n# comment\n0.5, 200, 20\n";
  const auto requests = read_request_trace(path);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].input_tokens, 200);
  EXPECT_DOUBLE_EQ(requests[1].arrival_s, 0.5);
  std::ofstream(path) << "0,100,10\n0.5,abc,20\n";
  try {
    read_request_trace(path);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":2: "), std::string::npos) << e.what();
  }
  std::ofstream(path) << "1,100,10\n0.5,100,20\n";
  EXPECT_THROW(read_request_trace(path), std::runtime_error);
  std::ofstream(path) << "1,100\n";
  EXPECT_THROW(read_request_trace(path), std::runtime_error);
}

}  // namespace
}  // namespace symtensor::sim
