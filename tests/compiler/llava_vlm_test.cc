// LLaVA-1.5 7B in the zoo (issue #32): the parameters and the forward GEMM FLOPs of the vision
// tower, projector and decoder against hand arithmetic from the HF config, image tiles, and
// a sequence too short for the image tokens refused, and a plan's label read off the language
// model's cuts.
#include <cstdint>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "onnx_models/model_zoo.h"  // protobuf before GiNaC (CLN's Mutable macro)
#include "compiler/analysis/model_stats.h"
#include "compiler/onnx_import/import.h"
#include "onnx_models/presets.h"
#include "compiler/search/megatron_search.h"
#include "compiler/search/symtensor_search.h"
#include "compiler/cost/step_estimate.h"
#include "compiler/cost/plan_analysis.h"
#include "tests/compiler/search_test_util.h"
#include "compiler/report/plan_label.h"
#include "compiler/search/make_plan.h"
#include "hardware/cluster.h"
#include "hardware/stack.h"

namespace symtensor::compiler {
namespace {

constexpr std::int64_t kVisionHidden = 1024, kVisionMlp = 4096, kVisionLayers = 23, kPatch = 14, kImage = 336;
constexpr std::int64_t kHidden = 4096, kMlp = 11008, kLayers = 32, kDecoderVocab = 32064;
constexpr std::int64_t kPatches = (kImage / kPatch) * (kImage / kPatch);  // 576

// One CLIP encoder layer: q, k, v, out with biases, two LayerNorms, fc1 and fc2 with biases.
constexpr std::int64_t kClipLayer = 4 * (kVisionHidden * kVisionHidden + kVisionHidden) + 2 * 2 * kVisionHidden +
                                    kVisionHidden * kVisionMlp + kVisionMlp + kVisionMlp * kVisionHidden + kVisionHidden;
constexpr std::int64_t kProjector = kVisionHidden * kHidden + kHidden + kHidden * kHidden + kHidden;

Graph import_llava(std::int64_t tiles, double batch, double seq) {
  models::Overrides o;
  o.image_tiles = tiles;
  return symtensor::testing::zoo_graph("llava-1.5-7b", o, batch, seq);
}

TEST(LlavaVlm, ParametersAreHfsLessTheUnreadLastVisionLayer) {
  const std::int64_t vision = kVisionHidden * 3 * kPatch * kPatch /* patch conv, no bias */ + kVisionHidden /* class */ +
                              (kPatches + 1) * kVisionHidden /* positions */ + 2 * kVisionHidden /* pre-LN */ +
                              kVisionLayers * kClipLayer;
  const std::int64_t decoder = 2 * kDecoderVocab * kHidden + kLayers * (4 * kHidden * kHidden + 3 * kHidden * kMlp + 2 * kHidden) + kHidden;
  const std::int64_t written = models::count_parameters(models::build_model(models::preset_config("llava-1.5-7b")));
  EXPECT_EQ(written, vision + kProjector + decoder);
  // llava-hf/llava-1.5-7b-hf holds 7,063,427,072: CLIP's 24th layer and post-LayerNorm besides,
  // which vision_feature_layer -2 leaves unread.
  EXPECT_EQ(written + kClipLayer + 2 * kVisionHidden, 7063427072LL);
}

TEST(LlavaVlm, ForwardGemmFlopsByHand) {
  const double batch = 2, seq = 4096;
  for (std::int64_t tiles : {1, 5}) {
    Graph g = import_llava(tiles, batch, seq);
    const ModelStats stats = compute_model_stats(g);
    const double per_tile = 2.0 * (kPatches + 1) * kVisionLayers * (4 * kVisionHidden * kVisionHidden + 2 * kVisionHidden * kVisionMlp) +
                            2.0 * kPatches * kVisionHidden * 3 * kPatch * kPatch + 2.0 * kPatches * (kVisionHidden * kHidden + kHidden * kHidden);
    const double per_token = 2.0 * (kLayers * (4 * kHidden * kHidden + 3 * kHidden * kMlp) + kHidden * kDecoderVocab);
    const std::optional<double> gemm = g.symbols.evaluate(stats.gemm_flops);
    ASSERT_TRUE(gemm.has_value());
    EXPECT_DOUBLE_EQ(*gemm, batch * (tiles * per_tile + seq * per_token)) << tiles << " tiles";
    // The images take tiles x 576 of the 4096 positions: the text is what is left.
    bool text_found = false;
    for (const Tensor& t : g.tensors())
      if (t.producer != kNone && g.node(t.producer).op_type == "Slice" && t.shape.size() == 3 &&
          g.symbols.evaluate(t.shape[1]) == seq - tiles * kPatches)
        text_found = true;
    EXPECT_TRUE(text_found) << tiles << " tiles";
  }
}

TEST(LlavaVlm, SequenceShorterThanTheImageTokensIsRefused) {
  try {
    import_llava(5, 2, 2048);  // 2880 image tokens
    FAIL() << "a 2048-token sequence took 2880 image tokens";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("-2880+seq = -832"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

// The vision tower's GEMMs come first in the graph and have no sequence loop (their tokens
// are patches): the label once read tp, dp and cp off them and printed cp=1 for a plan whose
// language model runs at cp=2.
TEST(LlavaVlm, PlanLabelReadsTheLanguageModelsDegrees) {
  Graph g = import_llava(5, 112, 4096);
  const hardware::Cluster cluster = hardware::scale_cluster(hardware::load_cluster("dgx-h100"), 4, std::nullopt);
  StrategyOptions so;
  so.megatron = "tp=2,cp=2,mb=7";
  const Plan plan = make_plan("megatron", g, cluster, so);
  const PlanDegrees d = plan_degrees(g, plan, cluster);
  EXPECT_EQ(d.tp, 2);
  EXPECT_EQ(d.cp, 2);
  EXPECT_EQ(d.dp, 8);
  EXPECT_EQ(d.micro_batches, 2);
}

// LLaVA-1.5 7B with 5 tiles, batch 112, on 32 H100 under the Megatron stack with 6% memory
// headroom: tp=2 x dp=16 runs one micro-batch of 7 samples but misses its memory by 0.7 GB
// (75.5 GiB of 74.9; at the default 5% it fits, since the patch convolution is cut with the
// batch); recomputing every layer it is slower than Megatron-best's tp=2 x cp=2. The SymTensor
// search tries the fastest layouts that memory forces to recompute with only the layers they
// need: here one, and it beats both.
TEST(LlavaVlm, SearchRecomputesOnlyTheLayersALayoutNeeds) {
  Graph g = import_llava(5, 112, 4096);
  hardware::Software megatron{"megatron"};
  megatron.memory_headroom = 0.06;
  const hardware::Cluster cluster = hardware::with_software(symtensor::testing::cluster_of("dgx-h100", 4, 8), megatron);
  const MegatronSearchResult best = megatron_search(g, cluster, StrategyOptions{});
  const SearchResult s = symtensor_search(g, cluster, StrategyOptions{});
  ASSERT_TRUE(s.estimate.fits) << s.summary;
  ASSERT_EQ(s.plan.recompute, RecomputePolicy::full) << s.summary;
  ASSERT_EQ(s.plan.recompute_layers.size(), 1u) << s.summary;
  EXPECT_GT(s.plan.recompute_layers[0], 0);
  EXPECT_LT(s.plan.recompute_layers[0], 32);
  EXPECT_LT(s.estimate.step_time_s, best.estimate.step_time_s) << s.summary << " vs " << to_string(best.knobs);
  EXPECT_EQ(best.knobs.tp, 2) << to_string(best.knobs);
  EXPECT_EQ(best.knobs.cp, 2) << to_string(best.knobs);
  Plan fewer = s.plan;
  --fewer.recompute_layers[0];
  EXPECT_FALSE(estimate_step(analyze_plan(g, cluster, fewer), fewer, cluster).fits);
}

}  // namespace
}  // namespace symtensor::compiler
