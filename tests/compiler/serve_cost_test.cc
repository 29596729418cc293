// The serving cost model (compiler/serve/serving_cost.h) checked by hand (issue #33): KV bytes
// per token of Llama-3-70B, the batch a KV budget allows, a batch-1 decode step, prefill FLOPs,
// and, through the simulation, TPOT at concurrency 1 against the batch-1 decode step.
#include <cmath>
#include <string>

#include <gtest/gtest.h>

#include "onnx_models/model_zoo.h"  // protobuf before GiNaC (CLN's Mutable macro)
#include "compiler/onnx_import/import.h"
#include "compiler/serve/serve_report.h"
#include "compiler/serve/serving_cost.h"
#include "compiler/serve/serving_model.h"
#include "hardware/cluster.h"
#include "hardware/serving_engine.h"
#include "onnx_models/presets.h"

namespace symtensor::compiler {
namespace {

using hardware::Precision;

// Factors chosen for the hand arithmetic, not the bundled engines' fitted ones.
constexpr const char* kServeTestEngine = R"(name: hand
memory: {fraction: 0.9, fraction_of: free, other_gb: 3.5}
scheduler: {block_size: 32, max_batch: 2048, max_num_tokens: 8192, chunked_prefill: true, reserve_whole_request: false}
overhead: {step_ms: 1, layer_us: 10}
kernels: {prefill: 0.5, decode_compute: 0.4, hbm: 0.8, source: test}
)";

const ServingModel& serve_llama3_70b() {
  static const ServingModel model = [] {
    ImportOptions io;
    io.bindings = {{"batch", 1.0}, {"seq", 128.0}};
    io.warn_opaque = false;
    Graph graph = import_onnx_model(models::build_model(models::preset_config("llama3-70b")), "llama3-70b", io);
    return read_serving_model(graph, "llama3-70b");
  }();
  return model;
}

ServingCost serve_cost_on(const std::string& profile, int gpus, ServingLayout layout, Precision weights, Precision kv) {
  return ServingCost(serve_llama3_70b(), layout, ServingPrecision{weights, kv},
                     hardware::scale_cluster(hardware::load_cluster(profile), 1, gpus),
                     hardware::parse_serving_engine(kServeTestEngine, "hand.yaml"));
}

// Llama-3-70B: L = 80, h = 8192, 64 heads, 8 KV heads of 128, FFN 28672, vocab 128256.
constexpr double kL = 80, kH = 8192, kHeads = 64, kKv = 8, kD = 128, kFfn = 28672, kVocab = 128256;
// Its parameters by hand: per layer q, k, v, o, the SwiGLU and two norms; embedding, head, final norm.
constexpr double kParams = kL * (kH * kHeads * kD + 2 * kH * kKv * kD + kHeads * kD * kH + 3 * kH * kFfn + 2 * kH) +
                           2 * kVocab * kH + kH;

TEST(ServeCost, Llama3_70bArchitectureAndKvBytesPerToken) {
  const ServingModel& m = serve_llama3_70b();
  EXPECT_EQ(m.layers, 80);
  EXPECT_EQ(m.kv_heads, 8);
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_DOUBLE_EQ(m.parameters, kParams);
  EXPECT_DOUBLE_EQ(m.embedding_parameters, kVocab * kH);
  // 2 * 80 * 8 * 128 * 2 B = 327,680 B = 320 KiB in bf16, half in fp8.
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, 2), 327680);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m, 1), 163840);
  // Per GPU: the 8 KV heads over TP 4 (2 each); over TP 16 each GPU keeps a whole head (ceil).
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(m, 2, 4, 1), 327680 / 4);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(m, 2, 16, 1), 2 * 80 * 1 * 128 * 2);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token_per_gpu(m, 2, 2, 2), 2 * 40 * 4 * 128 * 2);
}

TEST(ServeCost, TheBatchAKvBudgetAllows) {
  // H200 (141 GiB = 151.4 GB), TP 1, fp8 weights and KV: 0.9 of what the weights, activations and 3.5 GiB leave.
  // The embedding and the head (2 x vocab x h) stay in bf16, the rest is one byte a parameter.
  const ServingCost c = serve_cost_on("hgx-h200", 1, {}, Precision::fp8, Precision::fp8);
  const double activations = 8192 * (2 * kFfn + 4 * kH) * 2 + 2048 * kVocab * 4;
  const double weights = (kParams - 2 * kVocab * kH) * 1 + 2 * kVocab * kH * 2;
  EXPECT_DOUBLE_EQ(c.memory().weights, weights);
  const double kv = 0.9 * (151.4e9 - weights - activations - 3.5 * 1073741824.0);
  EXPECT_NEAR(c.memory().kv_cache, kv, 1);
  const std::int64_t pages = static_cast<std::int64_t>(std::floor(kv / (163840.0 * 32)));
  EXPECT_EQ(c.memory().kv_blocks, pages);
  // Requests of 1000 + 1000 tokens: 63 pages of 32 each.
  EXPECT_EQ(c.memory().batch_for(2000, 32), pages / 63);
  EXPECT_GT(pages / 63, 100);
  EXPECT_LT(pages / 63, 300);
  EXPECT_EQ(c.scheduler().kv_blocks, pages);
  // On an 80 GB H100 the bf16 weights alone do not fit: refused in one line.
  try {
    serve_cost_on("dgx-h100", 1, {}, Precision::bf16, Precision::bf16);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("does not fit H100-SXM5-80GB"), std::string::npos) << e.what();
  }
}

TEST(ServeCost, BatchOneDecodeStepIsWeightsAndKvOverTheHbmRate) {
  // H100, TP 1 fp8: one request at 2000 tokens of context reads every weight once (the layers'
  // in fp8, the head in bf16; of the embedding table only its token's row) and its KV (2000
  // tokens + the new one), at 0.8 of 3.35 TB/s; plus 1 ms + 80 x 10 us of overhead.
  const ServingCost c = serve_cost_on("dgx-h100", 1, {}, Precision::fp8, Precision::fp8);
  sim::ServingBatch b;
  b.decode_requests = 1;
  b.decode_context = 2000;
  const double read = (kParams - 2 * kVocab * kH) * 1 + kVocab * kH * 2;
  const double by_hand = (read + 2001 * 163840.0) / (3350e9 * 0.8) + 1e-3 + 80 * 10e-6;
  EXPECT_NEAR(c.step_seconds(b), by_hand, 1e-9);
  const auto parts = c.step_parts(b);
  EXPECT_EQ(parts.tp_comm_s, 0);
  EXPECT_LT(parts.gemm_compute_s, parts.weights_s / 50);  // batch 1 is far from compute-bound
  // TP 4 inside a node: a quarter of the weights and KV per GPU, plus 160 all-reduces.
  ServingLayout tp4;
  tp4.tp = 4;
  const ServingCost c4 = serve_cost_on("dgx-h100", 4, tp4, Precision::fp8, Precision::fp8);
  const auto p4 = c4.step_parts(b);
  EXPECT_NEAR(p4.weights_s + p4.kv_s, (read / 4 + 2001 * 163840.0 / 4) / (3350e9 * 0.8), 1e-9);
  // 160 all-reduces of one token's 16 KiB: each at least the NVLink latency (1 us), all latency-bound.
  EXPECT_GT(p4.tp_comm_s, 160 * 1e-6);
  EXPECT_LT(p4.tp_comm_s, 160 * 50e-6);
}

TEST(ServeCost, PrefillFlopsAreTwoPsPlusAttention) {
  const ServingCost c = serve_cost_on("dgx-h100", 8, ServingLayout{8, 1, 1, 1}, Precision::fp8, Precision::fp8);
  const double s = 2048;
  const double gemm_params = kParams - kVocab * kH;  // the embedding table is a lookup
  // Causal attention over s tokens: s (s + 1) / 2 query-key pairs, 4 FLOPs per pair, head dim and head.
  const double by_hand = 2 * gemm_params * s + 4 * kL * kHeads * kD * s * (s + 1) / 2;
  EXPECT_NEAR(c.prefill_flops(s, s * (s + 1) / 2), by_hand, by_hand * 1e-12);
  // CALIBRATION.md's form: 2 P s + 2 L s^2 h, attention about 2% of a 70B prefill at 2048
  // (2 * 80 * 2048 * 8192 / (2 * 69.5e9) = 1.93%).
  const double attention = 2 * kL * s * s * kH;
  EXPECT_NEAR(c.prefill_flops(s, s * s / 2), 2 * gemm_params * s + attention, 1e3);
  EXPECT_NEAR(attention / (2 * gemm_params * s), 0.0193, 0.0005);
  // A prefill step of the whole prompt on 8 GPUs: compute at 0.5 of the fp8 peak dominates.
  sim::ServingBatch b;
  b.prefill_tokens = 2048;
  b.prefill_requests = 1;
  b.prefill_attention_pairs = s * (s + 1) / 2;
  const auto parts = c.step_parts(b);
  EXPECT_NEAR(parts.gemm_compute_s + parts.attention_compute_s, by_hand / (8 * 1979e12 * 0.5), 1e-9);
}

TEST(ServeCost, ConcurrencyOneTpotApproachesTheBatchOneDecodeStep) {
  const ServingCost c = serve_cost_on("dgx-h100", 1, {}, Precision::fp8, Precision::fp8);
  sim::ServingWorkload w;
  w.mode = sim::ArrivalMode::closed_loop;
  w.concurrency = 1;
  w.requests = 3;
  w.input_tokens = 500;
  w.output_tokens = 200;
  const ServeResult r = run_serving(c, w);
  sim::ServingBatch mid;  // a decode halfway through the output
  mid.decode_requests = 1;
  mid.decode_context = 600;
  EXPECT_NEAR(r.metrics.tpot.mean / c.step_seconds(mid), 1, 0.001);
  EXPECT_EQ(r.run.peak_batch, 1);
}

TEST(ServeCost, PipelineStagesOverlapRequestsNotALoneOne) {
  // H200, fp8: one replica of one GPU, or two pipeline stages of 40 layers.
  const ServingCost one = serve_cost_on("hgx-h200", 2, {}, Precision::fp8, Precision::fp8);
  const ServingCost two = serve_cost_on("hgx-h200", 2, ServingLayout{1, 2, 1, 1}, Precision::fp8, Precision::fp8);
  EXPECT_DOUBLE_EQ(two.memory().weights, one.memory().weights / 2);
  EXPECT_DOUBLE_EQ(two.memory().kv_bytes_per_token, one.memory().kv_bytes_per_token / 2);
  sim::ServingBatch lone;  // a lone prompt goes through both stages in turn: no faster
  lone.prefill_tokens = 2048;
  lone.prefill_requests = 1;
  lone.prefill_attention_pairs = 2048.0 * 2049 / 2;
  EXPECT_DOUBLE_EQ(two.step_parts(lone).gemm_compute_s, one.step_parts(lone).gemm_compute_s);
  EXPECT_GT(two.step_parts(lone).pp_comm_s, 0);
  sim::ServingBatch pair = lone;  // two prompts of 1024: one per stage at a time, half the time
  pair.prefill_requests = 2;
  pair.prefill_attention_pairs = 2 * 1024.0 * 1025 / 2;
  EXPECT_DOUBLE_EQ(two.step_parts(pair).gemm_compute_s, one.step_parts(pair).gemm_compute_s / 2);
  // Decode: each stage reads its half of the weights once per micro-batch, so a step reads them all.
  sim::ServingBatch decodes;
  decodes.decode_requests = 2;
  decodes.decode_context = 2 * 1000;
  EXPECT_DOUBLE_EQ(two.step_parts(decodes).weights_s, one.step_parts(decodes).weights_s);
  EXPECT_NEAR(two.step_parts(decodes).kv_s, one.step_parts(decodes).kv_s / 2, 1e-15);
}

TEST(ServeCost, LayoutsTheModelCannotTakeAreRefused) {
  EXPECT_THROW(serve_cost_on("dgx-h100", 8, ServingLayout{3, 1, 1, 1}, Precision::fp8, Precision::fp8), std::runtime_error);
  EXPECT_THROW(serve_cost_on("dgx-a100", 8, ServingLayout{8, 1, 1, 1}, Precision::fp8, Precision::fp8), std::runtime_error);
  EXPECT_THROW(serve_cost_on("dgx-h100", 4, ServingLayout{4, 1, 1, 2}, Precision::fp8, Precision::fp8), std::runtime_error);
  EXPECT_THROW(serve_cost_on("dgx-h100", 8, ServingLayout{8, 1, 2, 1}, Precision::fp8, Precision::fp8), std::runtime_error);
}

}  // namespace
}  // namespace symtensor::compiler
