// compare on a model whose exporter named its dims otherwise: --batch-dim and --seq-dim
// (CompareOptions) make tokens/s and the step's lower bound what they are for `batch`/`seq`.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include "compiler/report/compare.h"
#include "onnx_models/model_zoo.h"
#include "onnx_models/presets.h"
#include "tests/compiler/onnx_test_util.h"

namespace symtensor::compiler {
namespace {

struct RenamedGptFile {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("symtensor_dims_test_" + std::to_string(::getpid()) + ".onnx");
  RenamedGptFile() {
    models::ModelConfig config = models::preset_config("gpt-1.7b-tiny");
    config.weights = models::Weights::none;
    const onnx::ModelProto m =
        symtensor::testing::with_dim_renamed(symtensor::testing::with_dim_renamed(models::build_model(config), "seq", "tokens"), "batch", "n");
    models::save_model(m, path.string());
  }
  ~RenamedGptFile() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
};

CompareResults compare_renamed(const std::string& model, const std::string& batch_dim, const std::string& sequence_dim,
                               const std::string& bind) {
  CompareOptions o;
  o.model = model;
  o.bind = bind;
  o.batch_dim = batch_dim;
  o.sequence_dim = sequence_dim;
  o.strategies = {"dp"};
  o.simulate = false;
  return run_compare(o, hardware::scale_cluster(hardware::load_cluster("dgx-a100"), 1, 8));
}

TEST(CompareDims, NamedSequenceGivesTokensPerSecond) {
  const RenamedGptFile file;
  const CompareResults named = compare_renamed(file.path.string(), "n", "tokens", "n=16,tokens=64");
  ASSERT_TRUE(named.strategies.at(0).ok) << named.strategies.at(0).error;
  EXPECT_EQ(named.tokens_per_sample, 64);
  EXPECT_GT(named.step_lower_bound_s, 0);
  EXPECT_LT(named.step_lower_bound_s, named.strategies[0].step_time_s());
  const CompareResults unnamed = compare_renamed(file.path.string(), "n", "", "n=16,tokens=64");
  EXPECT_EQ(unnamed.tokens_per_sample, 0);  // `seq` is not a dim of this model
  EXPECT_DOUBLE_EQ(unnamed.step_lower_bound_s, named.step_lower_bound_s);
  EXPECT_THROW(compare_renamed(file.path.string(), "n", "sequence", "n=16,tokens=64"), std::runtime_error);
}

}  // namespace
}  // namespace symtensor::compiler
