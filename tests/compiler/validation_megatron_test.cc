// Validation of plan -> lowering -> simulation against Megatron-LM SC'21 Table 1
// (shared/reference/CALIBRATION.md): each row's GPT from the zoo, the dgx-a100 profile scaled
// to the row's GPU count, the published TP/PP and global batch, micro-batch and interleaving
// from Megatron-LM's examples/sc21/run_table_1.sh, fp16, full recompute, PyTorch DDP (overlapped)
// on the first four rows and local DDP (not overlapped) on the rest. Once as the profile has
// it (no stack), and once under the Megatron stack (its element-wise fusion on, and its A100
// GEMM factor, hardware/stacks/megatron.yaml) on the 7 rows that factor was fitted on.
// Achieved TFLOP/s per GPU = F / (n * step), F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)).
#include <cmath>
#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/lowering/simulate_plan.h"
#include "compiler/onnx_import/import.h"
#include "compiler/search/make_plan.h"
#include "compiler/strategies/strategy.h"
#include "hardware/cluster.h"
#include "hardware/stack.h"
#include "onnx_models/model_zoo.h"
#include "onnx_models/presets.h"

namespace symtensor::compiler {
namespace {

struct Row {
  const char* preset;
  int tp, pp, gpus, batch, micro_batch, vp;
  double published_tflops;
};

// Table 1 of Narayanan et al. SC'21; micro-batch and vp from run_table_1.sh.
constexpr Row kTable1[] = {
    {"gpt-1.7b", 1, 1, 32, 512, 16, 1, 137},     {"gpt-3.6b", 2, 1, 64, 512, 16, 1, 138},
    {"gpt-7.5b", 4, 1, 128, 512, 16, 1, 142},    {"gpt-18.4b", 8, 1, 256, 1024, 8, 1, 135},
    {"gpt-39.1b", 8, 2, 512, 1536, 4, 1, 138},   {"gpt-76.1b", 8, 4, 1024, 1792, 2, 3, 140},
    {"gpt-145.6b", 8, 8, 1536, 2304, 2, 2, 148}, {"gpt-310.1b", 8, 16, 1920, 2160, 1, 2, 155},
    {"gpt-529.6b", 8, 35, 2520, 2520, 1, 3, 163}, {"gpt-1t", 8, 64, 3072, 3072, 1, 1, 163},
};

double megatron_flops(double B, double s, double l, double h, double V) {
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

struct Outcome {
  double simulated_tflops = 0, step_s = 0, mfu = 0;
  std::string breakdown;
};

Outcome simulate_row(const Row& row, bool overlap, bool megatron_stack) {
  const models::ModelConfig config = models::preset_config(row.preset);
  ImportOptions io;
  io.bindings = {{"batch", row.batch}, {"seq", static_cast<double>(config.seq)}};
  io.warn_opaque = false;
  io.fusion.attention = AttentionMode::materialized;  // the SC'21 runs had no flash attention
  Graph graph = import_onnx_model(models::build_model(config), row.preset, io);
  hardware::Cluster cluster = hardware::scale_cluster(hardware::load_cluster("dgx-a100"), row.gpus / 8, std::nullopt);
  if (megatron_stack) cluster = hardware::with_software(cluster, hardware::Software{});
  StrategyOptions so;
  so.precision = hardware::Precision::fp16;
  so.megatron = fmt::format("tp={},pp={},mb={},vp={},recompute=full", row.tp, row.pp, row.micro_batch, row.vp);
  const Plan plan = make_plan("megatron", graph, cluster, so);
  LoweringOptions lowering;
  lowering.overlap_grad_sync = overlap;
  sim::SimOptions options;
  options.record_trace = false;
  const PlanSimulation s = simulate_plan(graph, plan, cluster, lowering, options);
  Outcome o;
  o.step_s = s.report.step_time_s;
  o.mfu = s.report.mfu;
  o.simulated_tflops =
      megatron_flops(row.batch, config.seq, config.layers, config.hidden, config.vocab) / (row.gpus * o.step_s) / 1e12;
  o.breakdown = fmt::format("compute {:.2f} s, exposed comm {:.2f} s, bubble {:.2f} s, optimizer {:.3f} s",
                            s.report.compute_s, s.report.exposed_comm_s, s.report.bubble_s, s.report.optimizer_s);
  return o;
}

void print_row(const Row& row, const Outcome& o, double error) {
  std::printf("%-11s %3s %3s %5s %5s %3s %3s | %9s %9s %7s | %s\n", "model", "TP", "PP", "GPUs", "batch", "mb", "vp",
              "published", "simulated", "error", "step time and breakdown");
  std::printf("%-11s %3d %3d %5d %5d %3d %3d | %9.0f %9.1f %+6.1f%% | %.2f s: %s\n", row.preset, row.tp, row.pp,
              row.gpus, row.batch, row.micro_batch, row.vp, row.published_tflops, o.simulated_tflops, 100 * error,
              o.step_s, o.breakdown.c_str());
}

std::string row_test_name(const ::testing::TestParamInfo<std::size_t>& info) {
  std::string name = kTable1[info.param].preset;
  for (char& c : name)
    if (c == '-' || c == '.') c = '_';
  return name;
}

// One test per row, so that ctest runs the rows in parallel (each is a full 1F1B simulation,
// slow under the sanitizers); each prints its line of the table.
class ValidationMegatron : public ::testing::TestWithParam<std::size_t> {};

TEST_P(ValidationMegatron, Table1RowWithinTenPercent) {
  const std::size_t i = GetParam();
  const Row& row = kTable1[i];
  const Outcome o = simulate_row(row, /*overlap=*/i < 4, /*megatron_stack=*/false);
  const double error = o.simulated_tflops / row.published_tflops - 1;
  print_row(row, o, error);
  EXPECT_LT(std::abs(error), 0.10) << row.preset << ": published " << row.published_tflops << " TFLOP/s, simulated "
                                   << o.simulated_tflops;
}

INSTANTIATE_TEST_SUITE_P(Table1, ValidationMegatron, ::testing::Range<std::size_t>(0, std::size(kTable1)), row_test_name);

// The Megatron stack's A100 entry (gemm: 0.72) pinned to the rows it was fitted on, with the
// same 10% as above (here: geomean -1.8%, from -9.7% on 39.1B to +8.2% on 1.7B), so that a
// change to the fusion, the curve or the factor that moves the default stack off Megatron-LM's
// own A100 runs fails. The rows from 310.1B on
// are held back from the fit and are not asserted under the stack.
constexpr std::size_t kStackFittedRows = 7;

class ValidationMegatronStack : public ::testing::TestWithParam<std::size_t> {};

TEST_P(ValidationMegatronStack, FittedTable1RowWithinTenPercent) {
  const std::size_t i = GetParam();
  const Row& row = kTable1[i];
  const Outcome o = simulate_row(row, /*overlap=*/i < 4, /*megatron_stack=*/true);
  const double error = o.simulated_tflops / row.published_tflops - 1;
  print_row(row, o, error);
  EXPECT_LT(std::abs(error), 0.10) << row.preset << " under the Megatron stack: published " << row.published_tflops
                                   << " TFLOP/s, simulated " << o.simulated_tflops;
}

INSTANTIATE_TEST_SUITE_P(Table1, ValidationMegatronStack, ::testing::Range<std::size_t>(0, kStackFittedRows),
                         row_test_name);

}  // namespace
}  // namespace symtensor::compiler
