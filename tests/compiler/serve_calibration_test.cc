// Serving against the published TensorRT-LLM figures of shared/reference/CALIBRATION.md,
// section "LLM serving" (issue #33): throughput rows 9-14 (v0.14, trtllm-bench, infinite rate),
// first-token latency rows 17-19 and the static-batch rows (v0.9), each with its engine
// (hardware/engines/trtllm.yaml), precision (FP8 weights with an FP8 KV cache, or FP16) and
// layout (TP on one node). Models from the zoo at the published sizes (Llama 3.1 for v0.14;
// Llama 2 for v0.9, whose engines were built from Llama2 configs). Chosen where the source is
// silent: 1000 requests a throughput run (3000 for 128/128), all at once; TTFT = a lone request.
// The bar of the issue is mean |error| <= 15%, every figure <= 30%; the test asserts the bar
// this model reaches and prints the table.
#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "onnx_models/model_zoo.h"  // protobuf before GiNaC (CLN's Mutable macro)
#include "compiler/onnx_import/import.h"
#include "compiler/serve/serve_report.h"
#include "compiler/serve/serving_cost.h"
#include "compiler/serve/serving_model.h"
#include "tests/compiler/serve_test_util.h"
#include "hardware/cluster.h"
#include "hardware/serving_engine.h"
#include "onnx_models/presets.h"

namespace symtensor::compiler {
namespace {

enum class ServeFigure { throughput, ttft_ms, static_per_gpu };

struct ServeRow {
  const char* what;
  const char* model;    // zoo preset
  const char* profile;
  int tp;
  hardware::Precision precision;
  int input, output, requests;
  ServeFigure figure;
  double published;
};

using hardware::Precision;
constexpr auto kTput = ServeFigure::throughput;
constexpr auto kTtft = ServeFigure::ttft_ms;
constexpr auto kStatic = ServeFigure::static_per_gpu;

const ServeRow kServeRows[] = {
    {"9  70B FP8 H100 TP1 1000/1000", "llama3.1-70b", "dgx-h100", 1, Precision::fp8, 1000, 1000, 1000, kTput, 410.286},
    {"9  70B FP8 H100 TP2 1000/1000", "llama3.1-70b", "dgx-h100", 2, Precision::fp8, 1000, 1000, 1000, kTput, 4116.4444},
    {"9  70B FP8 H100 TP8 1000/1000", "llama3.1-70b", "dgx-h100", 8, Precision::fp8, 1000, 1000, 1000, kTput, 10730.156},
    {"10 70B FP8 H200 TP1 1000/1000", "llama3.1-70b", "hgx-h200", 1, Precision::fp8, 1000, 1000, 1000, kTput, 2585.0953},
    {"10 70B FP8 H200 TP2 1000/1000", "llama3.1-70b", "hgx-h200", 2, Precision::fp8, 1000, 1000, 1000, kTput, 4600.9616},
    {"10 70B FP8 H200 TP8 1000/1000", "llama3.1-70b", "hgx-h200", 8, Precision::fp8, 1000, 1000, 1000, kTput, 13081.434},
    {"11 70B FP16 A100 TP4 1000/1000", "llama3.1-70b", "dgx-a100", 4, Precision::fp16, 1000, 1000, 1000, kTput, 1762.6831},
    {"11 70B FP16 A100 TP8 1000/1000", "llama3.1-70b", "dgx-a100", 8, Precision::fp16, 1000, 1000, 1000, kTput, 3190.0211},
    {"12 70B FP8 H100 TP8 2048/128", "llama3.1-70b", "dgx-h100", 8, Precision::fp8, 2048, 128, 1000, kTput, 1966.6072},
    {"13 8B FP8 H200 128/128", "llama3.1-8b", "hgx-h200", 1, Precision::fp8, 128, 128, 3000, kTput, 27778.8885},
    {"13 8B FP8 H100 128/128", "llama3.1-8b", "dgx-h100", 1, Precision::fp8, 128, 128, 3000, kTput, 26933.1886},
    {"13 8B FP16 H100 128/128", "llama3.1-8b", "dgx-h100", 1, Precision::fp16, 128, 128, 3000, kTput, 15571.6549},
    {"13 8B FP16 A100 128/128", "llama3.1-8b", "dgx-a100", 1, Precision::fp16, 128, 128, 3000, kTput, 6701.7958},
    {"14 8B FP8 H100 2048/2048", "llama3.1-8b", "dgx-h100", 1, Precision::fp8, 2048, 2048, 1000, kTput, 8777.6623},
    {"14 8B FP16 A100 2048/2048", "llama3.1-8b", "dgx-a100", 1, Precision::fp16, 2048, 2048, 1000, kTput, 2264.9513},
    {"17 70B FP8 H100 TP4 TTFT in 128", "llama2-70b", "dgx-h100", 4, Precision::fp8, 128, 2, 1, kTtft, 19.6},
    {"17 70B FP8 H200 TP4 TTFT in 128", "llama2-70b", "hgx-h200", 4, Precision::fp8, 128, 2, 1, kTtft, 17.8},
    {"18 70B FP8 H100 TP8 TTFT in 2048", "llama2-70b", "dgx-h100", 8, Precision::fp8, 2048, 2, 1, kTtft, 85.1},
    {"18 70B FP8 H200 TP4 TTFT in 2048", "llama2-70b", "hgx-h200", 4, Precision::fp8, 2048, 2, 1, kTtft, 103.0},
    {"18 70B FP16 A100 TP8 TTFT in 2048", "llama2-70b", "dgx-a100", 8, Precision::fp16, 2048, 2, 1, kTtft, 249.2},
    {"19 7B FP8 H100 TTFT in 2048", "llama2-7b", "dgx-h100", 1, Precision::fp8, 2048, 2, 1, kTtft, 30.8},
    {"19 7B FP8 H200 TTFT in 2048", "llama2-7b", "hgx-h200", 1, Precision::fp8, 2048, 2, 1, kTtft, 30.2},
    {"19 7B FP16 A100 TTFT in 2048", "llama2-7b", "dgx-a100", 1, Precision::fp16, 2048, 2, 1, kTtft, 132.4},
    {"static 70B FP8 H100 TP2 128/128 b1024", "llama2-70b", "dgx-h100", 2, Precision::fp8, 128, 128, 1024, kStatic, 3214},
    {"static 70B FP8 H200 TP1 128/128 b1024", "llama2-70b", "hgx-h200", 1, Precision::fp8, 128, 128, 1024, kStatic, 3989},
    {"static 70B FP16 A100 TP4 128/128 b1024", "llama2-70b", "dgx-a100", 4, Precision::fp16, 128, 128, 1024, kStatic, 686},
    {"static 70B FP8 H100 TP2 2048/2048 b64", "llama2-70b", "dgx-h100", 2, Precision::fp8, 2048, 2048, 64, kStatic, 1011},
    {"static 70B FP8 H200 TP1 2048/2048 b64", "llama2-70b", "hgx-h200", 1, Precision::fp8, 2048, 2048, 64, kStatic, 1458},
};

// The bar reached: mean 8.2%, worst 24.2% (the 15% and 30% met), with device memory as
// the driver exposes it (H100's "80 GB" is 80 GiB) and the embedding and output head kept in 16
// bits under FP8 weights. Row 9's H100 TP1 hangs on a few GB (70.6 GB of weights on one GPU):
// it read -36.6% when 80 GB meant 80e9 bytes and the head was counted in FP8.
constexpr double kServeMeanBound = 0.09, kServeWorstBound = 0.25;

using testing::serving_model_of;

double serve_prediction(const ServeRow& r, const hardware::ServingEngine& engine) {
  ServingLayout layout;
  layout.tp = r.tp;
  const Precision kv = r.precision == Precision::fp8 ? Precision::fp8 : r.precision;
  const ServingCost cost(serving_model_of(r.model), layout, ServingPrecision{r.precision, kv},
                         hardware::scale_cluster(hardware::load_cluster(r.profile), 1, r.tp), engine);
  sim::ServingWorkload w;
  w.mode = r.figure == kTtft ? sim::ArrivalMode::closed_loop : sim::ArrivalMode::offline;
  w.concurrency = 1;
  w.requests = r.requests;
  w.input_tokens = r.input;
  w.output_tokens = r.output;
  const ServeResult result = run_serving(cost, w);
  switch (r.figure) {
    case kTput: return result.metrics.output_tokens_per_s;
    case kTtft: return result.metrics.ttft.mean * 1e3;
    case kStatic: return result.metrics.output_tokens_per_s / r.tp;
  }
  return 0;
}

TEST(ServeCalibration, TensorRtLlmPublishedFigures) {
  const hardware::ServingEngine engine = hardware::load_serving_engine("trtllm");
  double sum = 0, worst = 0;
  std::printf("%-40s %12s %12s %8s\n", "CALIBRATION.md row", "published", "predicted", "error");
  for (const ServeRow& r : kServeRows) {
    const double predicted = serve_prediction(r, engine);
    const double error = predicted / r.published - 1;
    std::printf("%-40s %12.1f %12.1f %+7.1f%%\n", r.what, r.published, predicted, 100 * error);
    sum += std::abs(error);
    worst = std::max(worst, std::abs(error));
    EXPECT_LE(std::abs(error), kServeWorstBound) << r.what;
  }
  const double mean = sum / std::size(kServeRows);
  std::printf("mean |error| %.1f%%, worst %.1f%% over %zu figures\n", 100 * mean, 100 * worst, std::size(kServeRows));
  EXPECT_LE(mean, kServeMeanBound);
}

}  // namespace
}  // namespace symtensor::compiler
