// Disaggregated prefill/decode in the serving simulation (simulator/serving/disaggregated.h)
// on hand-made step times: TTFT = the prefill pool's first token + the KV transfer; every
// token reaches its request; a decode pool's steps carry no prefill, so its TPOT is the decode
// step's, where an aggregated replica's decodes wait on the prompts sharing their steps.
#include <algorithm>

#include <gtest/gtest.h>

#include "simulator/serving/disaggregated.h"
#include "simulator/serving/serving.h"

namespace symtensor::sim {
namespace {

// A step: 10 ms plus 1 ms per 100 prefill tokens (decodes free beyond the 10 ms).
double disagg_toy_step(const ServingBatch& b) { return 0.010 + 0.001 * b.prefill_tokens / 100.0; }

ServingScheduler disagg_toy_scheduler() {
  ServingScheduler s;
  s.max_batch = 256;
  s.max_num_tokens = 8192;
  s.kv_blocks = 1000000;
  s.block_size = 16;
  return s;
}

TEST(ServingDisaggregated, TtftIsThePrefillPlusTheTransfer) {
  ServingWorkload w;
  w.mode = ArrivalMode::offline;
  w.requests = 1;
  w.input_tokens = 2000;
  w.output_tokens = 11;
  const ServingPool pool{disagg_toy_scheduler(), disagg_toy_step, 1};
  const ServingRun run = simulate_disaggregated(w, pool, pool, [](std::int64_t s) { return 1e-6 * s; });
  ASSERT_EQ(run.requests.size(), 1u);
  const RequestRecord& r = run.requests[0];
  // By hand: one prefill step of 2000 tokens, 10 + 20 ms; the transfer 2 ms; then 10 decode
  // steps of 10 ms each (the cache lands on an idle decode replica).
  EXPECT_NEAR(r.first_token_s, 0.030 + 0.002, 1e-12);
  EXPECT_NEAR(r.finish_s, 0.032 + 10 * 0.010, 1e-12);
  EXPECT_EQ(run.inter_token_s.size(), 10u);
  for (double gap : run.inter_token_s) EXPECT_NEAR(gap, 0.010, 1e-12);
  EXPECT_EQ(run.steps, 1 + 10);
}

TEST(ServingDisaggregated, DecodePoolTpotFreeOfPrefillInterference) {
  // 200 requests of 2000 -> 100 tokens at 8 req/s. Aggregated: two replicas share the
  // requests; a step holding a 2000-token prompt takes 30 ms, so decodes alongside it wait.
  ServingWorkload w;
  w.mode = ArrivalMode::poisson;
  w.rate = 8;
  w.requests = 200;
  w.input_tokens = 2000;
  w.output_tokens = 100;
  w.seed = 7;
  const ServingRun agg = simulate_serving(w, disagg_toy_scheduler(), disagg_toy_step, 2);
  const ServingPool pool{disagg_toy_scheduler(), disagg_toy_step, 1};
  const ServingRun dis = simulate_disaggregated(w, pool, pool, [](std::int64_t s) { return 1e-6 * s; });
  const ServingMetrics a = serving_metrics(agg), d = serving_metrics(dis);
  ASSERT_EQ(dis.requests.size(), 200u);
  for (const RequestRecord& r : dis.requests) {
    EXPECT_GE(r.first_token_s, r.arrival_s + 0.032 - 1e-12);  // a prefill step and the transfer at least
    EXPECT_GT(r.finish_s, r.first_token_s);
  }
  // Disaggregated: every decode step is 10 ms; a landed cache waits at most one step to join,
  // so TPOT <= (99 * 10 ms + 10 ms) / 99.
  EXPECT_LE(d.tpot.p99, 0.010 * 100 / 99 + 1e-12);
  EXPECT_GE(d.tpot.mean, 0.010 - 1e-12);
  // Aggregated: 8 req/s over two replicas put a prompt into about 4 in 100 steps of each
  // decode's 100: its TPOT carries them (by hand about 10 ms + 4 x 20 ms / 99 = 10.8 ms).
  EXPECT_GT(a.tpot.mean, 0.0105);
  EXPECT_GT(a.tpot.p99, d.tpot.p99);
  EXPECT_GT(*std::max_element(agg.inter_token_s.begin(), agg.inter_token_s.end()), 0.029);
}

TEST(ServingDisaggregated, ClosedLoopRefusedInOneLine) {
  ServingWorkload w;
  w.mode = ArrivalMode::closed_loop;
  w.concurrency = 4;
  w.input_tokens = 10;
  w.output_tokens = 10;
  const ServingPool pool{disagg_toy_scheduler(), disagg_toy_step, 1};
  try {
    simulate_disaggregated(w, pool, pool, [](std::int64_t) { return 0.0; });
    ADD_FAILURE() << "a closed loop was taken";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--concurrency"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace symtensor::sim
