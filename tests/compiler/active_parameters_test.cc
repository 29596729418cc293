// `inspect`'s active parameters per token: all parameters but the routed experts, of which a
// token runs through top_k of E. Checked against the counts the model cards publish.
#include <gtest/gtest.h>

#include "compiler/analysis/model_stats.h"
#include "compiler/onnx_import/import.h"
#include "onnx_models/model_zoo.h"
#include "onnx_models/presets.h"

namespace symtensor::compiler {
namespace {

struct Counts {
  double total = 0, active = 0;
};

Counts counts_of(const std::string& preset) {
  ImportOptions o;
  o.bindings = {{"batch", 1.0}, {"seq", 4096.0}};
  o.warn_opaque = false;
  Graph g = import_onnx_model(models::build_model(models::preset_config(preset)), preset, o);
  const ModelStats s = compute_model_stats(g);
  return {*g.symbols.evaluate(s.parameter_count), *g.symbols.evaluate(s.active_parameter_count)};
}

TEST(ActiveParameters, PublishedCountsOfTodaysMixtures) {
  // (preset, published total, published active), in billions; within 2%.
  const struct {
    const char* preset;
    double total, active;
  } published[] = {
      {"deepseek-v3", 671, 37},        // DeepSeek-V3 report: 671B, 37B activated (MTP not counted)
      {"qwen3-30b-a3b", 30.5, 3.3},    // Qwen3 model card
      {"qwen3-235b-a22b", 235, 22},    // Qwen3 model card
      {"mixtral-8x7b", 46.7, 12.9},    // Mixtral paper: 47B, 13B active
  };
  for (const auto& p : published) {
    const Counts c = counts_of(p.preset);
    EXPECT_NEAR(c.total / 1e9, p.total, 0.02 * p.total) << p.preset;
    EXPECT_NEAR(c.active / 1e9, p.active, 0.02 * p.active) << p.preset;
  }
  // gpt-oss-120b: OpenAI's 5.13B active leaves the input embedding out (201088 x 2880); this
  // count keeps it, as DeepSeek, Qwen and Mistral do.
  const Counts oss = counts_of("gpt-oss-120b");
  EXPECT_NEAR((oss.active - 201088.0 * 2880) / 1e9, 5.13, 0.02 * 5.13);
  // Without experts, every parameter is active.
  const Counts dense = counts_of("llama3-8b");
  EXPECT_DOUBLE_EQ(dense.active, dense.total);
}

}  // namespace
}  // namespace symtensor::compiler
