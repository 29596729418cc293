// Disaggregated serving's KV transfer (compiler/serve/serve_disaggregated.h) by hand: a
// 2000-token Llama-3-70B prompt's KV cache, 655.36 MB in bf16 (CALIBRATION.md: 655 MB at
// s = 2000), over NVLink inside a DGX H100 and over InfiniBand between two; and the TTFT of a
// lone request = the prefill pool's own TTFT + that transfer.
#include <string>

#include <gtest/gtest.h>

#include "onnx_models/model_zoo.h"  // protobuf before GiNaC (CLN's Mutable macro)
#include "compiler/onnx_import/import.h"
#include "compiler/serve/serve_disaggregated.h"
#include "compiler/serve/serving_model.h"
#include "hardware/cluster.h"
#include "hardware/serving_engine.h"
#include "onnx_models/presets.h"

namespace symtensor::compiler {
namespace {

using hardware::Precision;

const ServingModel& disagg_llama3_70b() {
  static const ServingModel model = [] {
    ImportOptions io;
    io.bindings = {{"batch", 1.0}, {"seq", 128.0}};
    io.warn_opaque = false;
    Graph graph = import_onnx_model(models::build_model(models::preset_config("llama3-70b")), "llama3-70b", io);
    return read_serving_model(graph, "llama3-70b");
  }();
  return model;
}

ServingCost disagg_cost(int nodes, ServingLayout l) {
  return ServingCost(disagg_llama3_70b(), l, ServingPrecision{Precision::bf16, Precision::bf16},
                     hardware::scale_cluster(hardware::load_cluster("dgx-h100"), nodes, 8),
                     hardware::load_serving_engine("trtllm"));
}

TEST(ServeDisaggregated, KvTransferOfA2000TokenLlama3_70bPromptByHand) {
  // 2 * 80 layers * 8 KV heads * 128 * 2 B = 327,680 B a token; 2000 tokens: 655.36 MB.
  EXPECT_DOUBLE_EQ(2000 * kv_bytes_per_token(disagg_llama3_70b(), 2), 655.36e6);
  // One DGX H100: prefill tp=4 and decode tp=4 fill its 8 GPUs; each GPU holds 2 of the 8 KV
  // heads, 163.84 MB, and sends it over NVLink at 450 GB/s with 1 us latency: 0.365 ms.
  const ServingCost p1 = disagg_cost(1, {4, 1, 1, 1}), d1 = disagg_cost(1, {4, 1, 1, 1});
  const KvTransferLink nvlink = kv_transfer_link(p1.cluster(), 4, 4);
  EXPECT_EQ(nvlink.level, "gpu");
  EXPECT_DOUBLE_EQ(nvlink.bandwidth, 450e9);
  EXPECT_NEAR(kv_transfer_seconds(p1, d1, 2000, nvlink), 163.84e6 / 450e9 + 1e-6, 1e-12);
  // Two DGX H100: tp=8 each, one node each: 81.92 MB a GPU over 400 Gb/s InfiniBand (50 GB/s
  // a GPU, 5 us): 1.643 ms.
  const ServingCost p2 = disagg_cost(2, {8, 1, 1, 1}), d2 = disagg_cost(2, {8, 1, 1, 1});
  const KvTransferLink ib = kv_transfer_link(p2.cluster(), 8, 8);
  EXPECT_EQ(ib.level, "node");
  EXPECT_NEAR(kv_transfer_seconds(p2, d2, 2000, ib), 81.92e6 / 50e9 + 5e-6, 1e-12);
  // Pools of different TP: the GPU with the most to move sets the time (tp=4 sends 2 heads'
  // worth, tp=8 receives 1).
  const ServingCost d3 = disagg_cost(2, {8, 1, 1, 1}), p3 = disagg_cost(2, {4, 1, 1, 1});
  EXPECT_NEAR(kv_transfer_seconds(p3, d3, 2000, kv_transfer_link(p3.cluster(), 4, 8)), 163.84e6 / 50e9 + 5e-6, 1e-12);
  // More GPUs than the cluster: refused in one line.
  EXPECT_THROW(kv_transfer_link(p1.cluster(), 8, 4), std::runtime_error);
}

TEST(ServeDisaggregated, TtftOfALoneRequestIsThePrefillPlusTheTransfer) {
  const ServingCost p = disagg_cost(2, {8, 1, 1, 1}), d = disagg_cost(2, {8, 1, 1, 1});
  sim::ServingWorkload w;
  w.requests = 1;
  w.input_tokens = 2000;
  w.output_tokens = 50;
  const ServeResult dis = run_disaggregated(p, d, w);
  sim::ServingWorkload first = w;
  first.output_tokens = 1;
  const ServeResult pre = run_serving(p, first);
  const double transfer = 81.92e6 / 50e9 + 5e-6;
  EXPECT_NEAR(dis.metrics.ttft.mean, pre.metrics.ttft.mean + transfer, 1e-9);
  // Its 49 decodes on the idle decode pool: each a batch-1 step at its context.
  double decodes = 0;
  for (int i = 0; i < 49; ++i) {
    sim::ServingBatch b;
    b.decode_requests = 1;
    b.decode_context = 2000 + i;
    decodes += d.step_seconds(b);
  }
  EXPECT_NEAR(dis.metrics.e2e.mean, pre.metrics.ttft.mean + transfer + decodes, 1e-9);
  const std::string text = disaggregated_text(p, d, dis);
  EXPECT_NE(text.find("655.4 MB"), std::string::npos) << text;
  EXPECT_NE(text.find("1.643 ms"), std::string::npos) << text;
}

}  // namespace
}  // namespace symtensor::compiler
