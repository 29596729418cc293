// The serving search's disaggregated layouts (compiler/serve/serve_search.h, issue #33):
// Llama-3-70B in FP8 on one DGX H100 node. Long prompts under a tight TPOT SLO: aggregated
// replicas run prefills inside their decode steps, so the search answers disaggregated, the
// decode pool's TPOT p99 well under the aggregated one's; short prompts under loose SLOs: one
// aggregated replica does both within them, and the pools need more GPUs.
#include <string>

#include <gtest/gtest.h>

#include "compiler/serve/serve_search.h"
#include "hardware/cluster.h"
#include "hardware/serving_engine.h"
#include "tests/compiler/serve_test_util.h"

namespace symtensor::compiler {
namespace {

ServeSearchResult search_llama3_70b_on_h100(double rate, std::int64_t input, std::int64_t output, sim::ServingSlo slo) {
  const hardware::Cluster cluster = hardware::scale_cluster(hardware::load_cluster("dgx-h100"), 1, std::nullopt);
  ServeSearchOptions o;
  o.rate = rate;
  o.input_tokens = input;
  o.output_tokens = output;
  o.slo = slo;
  return search_serving(testing::serving_model_of("llama3-70b"), ServingPrecision{hardware::Precision::fp8, hardware::Precision::fp8},
                        cluster, hardware::load_serving_engine("trtllm"), o);
}

TEST(ServeSearchDisaggregated, WinsUnderATightTpotWithLongPrompts) {
  const ServeSearchResult r = search_llama3_70b_on_h100(2, 8000, 400, sim::ServingSlo{2.0, 0.03});
  std::printf("%s\n", r.why.c_str());
  ASSERT_TRUE(r.disaggregated_chosen) << r.why;
  ASSERT_GE(r.fewest_disaggregated, 0);
  const ServeDisaggregatedCandidate& d = r.disaggregated[r.fewest_disaggregated];
  EXPECT_TRUE(d.meets);
  EXPECT_GE(d.attainment, 0.9);
  EXPECT_LE(d.gpus(), 8);
  EXPECT_GE(d.prefill.replicas, d.prefill_bound);  // the throughput bounds are lower bounds
  EXPECT_GE(d.decode.replicas, d.decode_bound);
  // The reason: the decode pool's TPOT p99 without prefills in its steps, under the SLO, where
  // the aggregated layouts' (the fewest meeting the SLOs, or none) miss it or need more GPUs.
  EXPECT_LE(d.tpot_p99_s, 0.03 * 1.5);
  EXPECT_NE(r.why.find("disaggregated: " + serve_answer(r)->layout), std::string::npos) << r.why;
  EXPECT_NE(r.why.find("TPOT p99"), std::string::npos) << r.why;
  EXPECT_NE(r.why.find("without prefill interference"), std::string::npos) << r.why;
  if (r.fewest_gpus >= 0) {
    const ServeCandidate& a = r.candidates[r.fewest_gpus];
    EXPECT_TRUE(a.layout.gpus() > d.gpus() || (a.layout.gpus() == d.gpus() && a.goodput_per_gpu() < d.goodput_per_gpu()));
    EXPECT_GT(a.tpot_p99_s, d.tpot_p99_s);
  } else {
    EXPECT_NE(r.why.find("no aggregated layout meets the SLOs"), std::string::npos) << r.why;
  }
  const std::optional<ServeAnswer> answer = serve_answer(r);
  ASSERT_TRUE(answer);
  EXPECT_TRUE(answer->disaggregated);
  EXPECT_EQ(answer->gpus, d.gpus());
  EXPECT_DOUBLE_EQ(answer->output_tokens_per_s, d.output_tokens_per_s);
}

TEST(ServeSearchDisaggregated, AggregatedWinsUnderLooseSlos) {
  const ServeSearchResult r = search_llama3_70b_on_h100(1, 1000, 200, sim::ServingSlo{5.0, 0.2});
  std::printf("%s\n", r.why.c_str());
  ASSERT_FALSE(r.disaggregated_chosen) << r.why;
  ASSERT_GE(r.fewest_gpus, 0);
  const ServeCandidate& a = r.candidates[r.fewest_gpus];
  EXPECT_NE(r.why.find("aggregated: tp=" + std::to_string(a.layout.tp)), std::string::npos) << r.why;
  // Every disaggregated layout has a replica of each pool: at least tp_prefill + tp_decode
  // GPUs, more than the aggregated answer or as many for no more goodput per GPU.
  ASSERT_FALSE(r.disaggregated.empty());
  ASSERT_GE(r.fewest_disaggregated, 0);
  const ServeDisaggregatedCandidate& d = r.disaggregated[r.fewest_disaggregated];
  EXPECT_TRUE(d.gpus() > a.layout.gpus() || d.goodput_per_gpu() <= a.goodput_per_gpu());
  EXPECT_NE(r.why.find(d.gpus() > a.layout.gpus() ? "needs " + std::to_string(d.gpus()) + " GPUs" : "as many GPUs"),
            std::string::npos)
      << r.why;
  const std::optional<ServeAnswer> answer = serve_answer(r);
  ASSERT_TRUE(answer);
  EXPECT_FALSE(answer->disaggregated);
  EXPECT_EQ(answer->gpus, a.layout.gpus());
}

}  // namespace
}  // namespace symtensor::compiler
