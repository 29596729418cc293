// The serving layout search (compiler/serve/serve_search.h, issue #33): Llama-3-70B in FP8 on a
// DGX H100 and an HGX H200 node at 4 requests/s of 1000 -> 200 tokens under TTFT <= 0.5 s and
// TPOT <= 50 ms: the layout with the fewest GPUs meets the SLOs, no layout meeting them has
// fewer GPUs, one replica fewer of it does not meet them, and the H200's memory needs no more
// GPUs than the H100's. How fast the search answers is measured in bench/serve_bench.cc
// (BM_ServeSearchLlama3_70B_H100 / _H200), not asserted here.
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include "onnx_models/model_zoo.h"  // protobuf before GiNaC (CLN's Mutable macro)
#include "compiler/onnx_import/import.h"
#include "compiler/serve/serve_report.h"
#include "compiler/serve/serve_search.h"
#include "compiler/serve/serving_model.h"
#include "hardware/cluster.h"
#include "hardware/serving_engine.h"
#include "onnx_models/presets.h"

namespace symtensor::compiler {
namespace {

TEST(ServeSearch, Llama3_70bFewestGpusMeetTheSlosAndH200NeedsNoMoreThanH100) {
  ImportOptions io;
  io.bindings = {{"batch", 1.0}, {"seq", 1000.0}};
  io.warn_opaque = false;
  Graph graph = import_onnx_model(models::build_model(models::preset_config("llama3-70b")), "llama3-70b", io);
  const ServingModel model = read_serving_model(graph, "llama3-70b");
  const hardware::ServingEngine engine = hardware::load_serving_engine("trtllm");
  const ServingPrecision fp8{hardware::Precision::fp8, hardware::Precision::fp8};
  ServeSearchOptions o;
  o.rate = 4;
  o.input_tokens = 1000;
  o.output_tokens = 200;
  o.slo = sim::ServingSlo{0.5, 0.05};
  int fewest[2] = {0, 0};
  int i = 0;
  for (const char* profile : {"dgx-h100", "hgx-h200"}) {
    const hardware::Cluster cluster = hardware::scale_cluster(hardware::load_cluster(profile), 1, std::nullopt);
    const ServeSearchResult r = search_serving(model, fp8, cluster, engine, o);
    ASSERT_GE(r.fewest_gpus, 0) << profile;
    const ServeCandidate& best = r.candidates[r.fewest_gpus];
    EXPECT_TRUE(best.meets);
    EXPECT_GE(best.attainment, 0.9);
    fewest[i++] = best.layout.gpus();
    for (const ServeCandidate& c : r.candidates) {
      if (c.meets) {
        EXPECT_GE(c.layout.gpus(), best.layout.gpus());
      }
    }
    if (best.layout.replicas > 1) {  // one replica fewer misses the SLOs
      ServingLayout fewer = best.layout;
      fewer.replicas = 1;
      const ServingCost cost(model, fewer, fp8, cluster, engine);
      sim::ServingWorkload w;
      w.mode = sim::ArrivalMode::poisson;
      w.rate = o.rate / (best.layout.replicas - 1);
      w.requests = o.requests_per_replica;
      w.input_tokens = o.input_tokens;
      w.output_tokens = o.output_tokens;
      EXPECT_LT(run_serving(cost, w, o.slo).metrics.slo_attainment, 0.9);
    }
    std::printf("%s: fewest GPUs %d (tp=%d pp=%d x %d), most goodput per GPU %.1f tokens/s\n", profile, best.layout.gpus(),
                best.layout.tp, best.layout.pp, best.layout.replicas,
                r.candidates[r.best_goodput_per_gpu].goodput_per_gpu());
  }
  EXPECT_LE(fewest[1], fewest[0]);
}

}  // namespace
}  // namespace symtensor::compiler
