// Preset lookup, tiny variants and command-line overrides.
#include <functional>
#include <stdexcept>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "onnx_models/presets.h"

namespace symtensor::models {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(Presets, MegatronRowsHaveTheirTableShapes) {
  // Table 1: (heads, hidden, layers) of the 1.7B and 1T rows.
  ModelConfig small = preset_config("gpt-1.7b");
  EXPECT_EQ(small.heads, 24);
  EXPECT_EQ(small.hidden, 2304);
  EXPECT_EQ(small.layers, 24);
  EXPECT_EQ(small.vocab, 51200);
  EXPECT_EQ(small.seq, 2048);
  ModelConfig big = preset_config("gpt-1t");
  EXPECT_EQ(big.heads, 160);
  EXPECT_EQ(big.hidden, 25600);
  EXPECT_EQ(big.layers, 128);
}

TEST(Presets, UnknownNameIsNamedInTheError) {
  EXPECT_THAT(error_of([] { preset_config("gpt-2b"); }), ::testing::HasSubstr("'gpt-2b'"));
  EXPECT_THAT(error_of([] { preset_config("-tiny"); }), ::testing::HasSubstr("unknown model"));
}

TEST(Presets, FamilyNameTakesOverrides) {
  const ModelConfig gpt = preset_config("gpt");
  EXPECT_EQ(gpt.family, Family::gpt);
  EXPECT_EQ(gpt.name, "gpt");
  Overrides o;
  o.layers = 8;
  EXPECT_EQ(apply_overrides(gpt, o).layers, 8);
  const ModelConfig llama = preset_config("llama-tiny");
  EXPECT_EQ(llama.family, Family::llama);
  EXPECT_EQ(llama.layers, 2);
  EXPECT_THAT(error_of([] { preset_config("gpt2b"); }), ::testing::HasSubstr("unknown model 'gpt2b'"));
}

TEST(Presets, TinyKeepsTheStructure) {
  ModelConfig gqa = preset_config("llama2-70b-tiny");
  EXPECT_EQ(gqa.layers, 2);
  EXPECT_EQ(gqa.hidden, 64);
  EXPECT_LT(gqa.kv_heads, gqa.heads);
  EXPECT_EQ(gqa.weights, Weights::random);
  EXPECT_EQ(preset_config("llama2-7b-tiny").kv_heads, preset_config("llama2-7b-tiny").heads);
  ModelConfig moe = preset_config("mixtral-8x7b-tiny");
  EXPECT_GT(moe.experts, moe.top_k);
  EXPECT_EQ(moe.top_k, 2);
  EXPECT_TRUE(preset_config("qwen2-7b-tiny").qkv_bias);
  EXPECT_EQ(preset_names().size(), 2 * presets().size());
}

TEST(Overrides, ChangeOnlyWhatIsGiven) {
  Overrides o;
  o.layers = 2;
  o.hidden = 256;
  o.heads = 8;
  ModelConfig c = apply_overrides(preset_config("gpt-1.7b"), o);
  EXPECT_EQ(c.layers, 2);
  EXPECT_EQ(c.kv_heads, 8);            // multi-head stays multi-head
  EXPECT_EQ(c.intermediate, 4 * 256);  // GPT MLP follows hidden
  EXPECT_EQ(c.vocab, 51200);
  ModelConfig l = apply_overrides(preset_config("llama2-70b"), Overrides{.layers = 4});
  EXPECT_EQ(l.kv_heads, 8);
  EXPECT_EQ(l.intermediate, 28672);
}

TEST(Overrides, InconsistentValuesAreRejected) {
  EXPECT_THAT(error_of([] { apply_overrides(preset_config("gpt-1.7b"), Overrides{.heads = 7}); }),
              ::testing::HasSubstr("multiple of heads"));
  EXPECT_THAT(error_of([] { apply_overrides(preset_config("llama2-70b"), Overrides{.kv_heads = 7}); }),
              ::testing::HasSubstr("kv-heads"));
  EXPECT_THAT(error_of([] { apply_overrides(preset_config("gpt-1.7b"), Overrides{.kv_heads = 4}); }),
              ::testing::HasSubstr("llama family"));
  EXPECT_THAT(error_of([] { apply_overrides(preset_config("mixtral-8x7b"), Overrides{.top_k = 9}); }),
              ::testing::HasSubstr("top-k"));
  EXPECT_THAT(error_of([] { apply_overrides(preset_config("vit-l16"), Overrides{.patch_size = 15}); }),
              ::testing::HasSubstr("patch size"));
  EXPECT_THAT(error_of([] { apply_overrides(preset_config("bert-large"), Overrides{.layers = 0}); }),
              ::testing::HasSubstr("layers"));
  EXPECT_THROW(parse_weights("some"), std::runtime_error);
}

}  // namespace
}  // namespace symtensor::models
