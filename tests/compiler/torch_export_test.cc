// Models exported by PyTorch 1.13 (tests/data/torch/export_models.py): the importer's
// parameter count equals torch's own count (sum of numel over model.parameters(), tied
// weights once), recorded by the export script in expected.json.
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "compiler/analysis/model_stats.h"
#include "compiler/onnx_import/import.h"

namespace symtensor::compiler {
namespace {

const std::string kDir = std::string(SYMTENSOR_TEST_DATA) + "/torch/";

class TorchExport : public ::testing::TestWithParam<const char*> {};

TEST_P(TorchExport, ImportsWithTorchsParameterCountAndNoOpaqueOps) {
  const std::string name = GetParam();
  nlohmann::json expected;
  std::ifstream(kDir + "expected.json") >> expected;
  ImportOptions o;
  o.bindings = {{"batch", 2.0}};
  Graph g = import_onnx_file(kDir + name + ".onnx", o);
  const ModelStats stats = compute_model_stats(g);
  ASSERT_TRUE(GiNaC::is_a<GiNaC::numeric>(stats.parameter_count)) << stats.parameter_count;
  EXPECT_EQ(GiNaC::ex_to<GiNaC::numeric>(stats.parameter_count).to_long(), expected[name]["parameters"].get<long>());
  EXPECT_TRUE(stats.opaque_ops.empty()) << stats.opaque_ops.front();
  // The batch dim survives the exporter's shape sub-graphs into the output.
  const Tensor& out = g.tensor(g.outputs.at(0));
  EXPECT_TRUE(out.shape.at(0).is_equal(g.symbols.get("batch"))) << out.shape.at(0);
  EXPECT_GT(*g.symbols.evaluate(stats.gemm_flops.subs(GiNaC::lst{g.symbols.get("seq") == 16})), 0);
}

INSTANTIATE_TEST_SUITE_P(Exports, TorchExport, ::testing::Values("gpt_tiny", "encoder", "resnet_tiny", "squeezenet"));

TEST(TorchExport, TinyGptGemmFlopsFollowTheLayerFormula) {
  // 2 layers, h 64, vocab 256, tied head: per layer 24·b·s·h² + 4·b·s²·h, head 2·b·s·h·V.
  ImportOptions materialized;
  materialized.fusion.attention = AttentionMode::materialized;
  Graph g = import_onnx_file(kDir + "gpt_tiny.onnx", materialized);
  const GiNaC::ex b = g.symbols.get("batch"), s = g.symbols.get("seq");
  const GiNaC::ex expected = 2 * (24 * b * s * 64 * 64 + 4 * b * s * s * 64) + 2 * b * s * 64 * 256;
  EXPECT_TRUE((compute_model_stats(g).gemm_flops - expected).expand().is_zero()) << compute_model_stats(g).gemm_flops;
  // Fused (the default): each layer's MatMul/Div/Softmax/MatMul (no mask) is one kernel.
  Graph fused = import_onnx_file(kDir + "gpt_tiny.onnx");
  const ModelStats stats = compute_model_stats(fused);
  const GiNaC::ex fb = fused.symbols.get("batch"), fs = fused.symbols.get("seq");
  EXPECT_TRUE((stats.attention_flops - 2 * 4 * fb * fs * fs * 64).expand().is_zero()) << stats.attention_flops;
  EXPECT_EQ(stats.fused.at("attention"), "2; not causal; e.g. /blocks.0/FusedAttention");
}

}  // namespace
}  // namespace symtensor::compiler
