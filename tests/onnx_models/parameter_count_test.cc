// Parameter counts of the generated graphs (read from the proto: listed weight inputs plus
// initializers) against the exact arithmetic of each architecture and the published sizes.
#include <cmath>
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "onnx_models/model_zoo.h"

namespace symtensor::models {
namespace {

std::int64_t count(const std::string& preset) { return count_parameters(build_model(preset_config(preset))); }

// Relative gap between a count and a published figure.
double gap(double value, double published) { return std::abs(value - published) / published; }

struct MegatronRow {
  const char* preset;
  double table_billions;  // Table 1 "params (B)"
  std::int64_t layers, hidden;
};

class MegatronTable : public ::testing::TestWithParam<MegatronRow> {};

TEST_P(MegatronTable, MatchesThePaperFormula) {
  const MegatronRow row = GetParam();
  const double l = row.layers, h = row.hidden, V = 51200, s = 2048;
  // P = 12lh^2 (1 + 13/(12h) + (V+s)/(12lh)) = 12lh^2 + 13lh + (V+s)h. The graph also has the
  // final LayerNorm (2h), which the formula leaves out.
  const double formula = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
  const double graph = static_cast<double>(count(row.preset));
  EXPECT_DOUBLE_EQ(graph, formula + 2 * h);
  EXPECT_LT(gap(graph, formula), 0.005);
  // The table rounds to 0.1B: the 1.7B row is 1.652B, the 3.6B row 3.562B.
  EXPECT_LT(std::abs(graph - row.table_billions * 1e9), std::max(0.005 * row.table_billions * 1e9, 0.05e9))
      << row.preset;
}

INSTANTIATE_TEST_SUITE_P(Table1, MegatronTable,
                         ::testing::Values(MegatronRow{"gpt-1.7b", 1.7, 24, 2304}, MegatronRow{"gpt-3.6b", 3.6, 30, 3072},
                                           MegatronRow{"gpt-7.5b", 7.5, 36, 4096}, MegatronRow{"gpt-18.4b", 18.4, 40, 6144},
                                           MegatronRow{"gpt-39.1b", 39.1, 48, 8192}, MegatronRow{"gpt-76.1b", 76.1, 60, 10240},
                                           MegatronRow{"gpt-145.6b", 145.6, 80, 12288},
                                           MegatronRow{"gpt-310.1b", 310.1, 96, 16384},
                                           MegatronRow{"gpt-529.6b", 529.6, 105, 20480},
                                           MegatronRow{"gpt-1t", 1008.0, 128, 25600}));

TEST(ParameterCount, Gpt3And2) {
  // GPT-3 175B with the 50257-token vocabulary: 12*96*12288^2 + 13*96*12288 + (50257+2048)*12288 + 2*12288.
  EXPECT_EQ(count("gpt3-175b"), 173946175488LL + 15335424LL + 642723840LL + 24576LL);
  EXPECT_LT(gap(count("gpt3-175b"), 175e9), 0.005);
  // GPT-2 small (HF "124M"): 124,439,808.
  EXPECT_EQ(count("gpt2-small"), 124439808);
}

TEST(ParameterCount, Llama2) {
  // Per layer 4h^2 (attention) + 3hI (SwiGLU) + 2h (norms); untied embedding and head 2Vh; final norm h.
  // 7B: 32*(4*4096^2 + 3*4096*11008 + 2*4096) + 2*32000*4096 + 4096 = 6,738,415,616.
  EXPECT_EQ(count("llama2-7b"), 6738415616LL);
  EXPECT_LT(gap(count("llama2-7b"), 6.74e9), 0.005);
  // 13B: 40*(4*5120^2 + 3*5120*13824 + 2*5120) + 2*32000*5120 + 5120 = 13,015,864,320.
  EXPECT_EQ(count("llama2-13b"), 13015864320LL);
  EXPECT_LT(gap(count("llama2-13b"), 13.0e9), 0.005);
  // 70B, 8 KV heads of 128: attention 2h^2 + 2*h*1024 per layer:
  // 80*(2*8192^2 + 2*8192*1024 + 3*8192*28672 + 2*8192) + 2*32000*8192 + 8192 = 68,976,648,192.
  EXPECT_EQ(count("llama2-70b"), 68976648192LL);
  EXPECT_LT(gap(count("llama2-70b"), 69.0e9), 0.005);
}

TEST(ParameterCount, Qwen2) {
  // 7B: 28*(2*3584^2 + 2*3584*512 + (3584+2*512) biases + 3*3584*18944 + 2*3584) + 2*152064*3584 + 3584.
  EXPECT_EQ(count("qwen2-7b"), 7615616512LL);
  EXPECT_LT(gap(count("qwen2-7b"), 7.6e9), 0.005);
  // 72B: 80*(2*8192^2 + 2*8192*1024 + 10240 + 3*8192*29568 + 2*8192) + 2*152064*8192 + 8192.
  EXPECT_EQ(count("qwen2-72b"), 72706203648LL);
  EXPECT_LT(gap(count("qwen2-72b"), 72.7e9), 0.005);
}

TEST(ParameterCount, MixtralTotalAndActive) {
  // Per layer: attention 2*4096^2 + 2*4096*1024, router 4096*8, 8 experts of 3*4096*14336, norms 2*4096.
  const std::int64_t total = count("mixtral-8x7b");
  EXPECT_EQ(total, 46702792704LL);
  EXPECT_LT(gap(total, 46.7e9), 0.005);
  // Active per token: 6 of the 8 experts idle in each of the 32 layers.
  const std::int64_t active = total - 32LL * 6 * 3 * 4096 * 14336;
  EXPECT_EQ(active, 12879925248LL);
  EXPECT_LT(gap(active, 12.9e9), 0.005);
}

TEST(ParameterCount, EncodersAndResNet) {
  // BERT-large: embeddings (30522+512+2)*1024 + LN 2048; 24*(12h^2 + 13h) with h=1024; pooler h^2 + h.
  EXPECT_EQ(count("bert-large"), 335141888);
  EXPECT_LT(gap(count("bert-large"), 335e6), 0.005);
  // ViT-L/16: patch conv 3*16*16*1024 + 1024, class token 1024, positions 197*1024,
  // 24*(12h^2 + 13h), final LN 2048, classifier 1024*1000 + 1000 = 304,326,632.
  EXPECT_EQ(count("vit-l16"), 304326632);
  EXPECT_LT(gap(count("vit-l16"), 304e6), 0.005);
  // ResNet-50: 25,557,032 trainable (torchvision) + running mean/var of 26,560 BN channels.
  EXPECT_EQ(count("resnet50"), 25557032 + 2 * 26560);
  EXPECT_LT(gap(count("resnet50"), 25.6e6), 0.005);
}

}  // namespace
}  // namespace symtensor::models
