// Megatron-LM's padded vocabulary (#30): a vocabulary that tensor parallelism does not divide
// is padded to a multiple of --make-vocab-size-divisible-by (128) x tp, as Megatron-LM pads it,
// and the padded rows are priced: the LM head's FLOPs, its tied embedding's memory and the
// logits are those of the padded vocabulary, split tp ways. GPT-3 175B's layers (hidden 12288,
// vocabulary 50257), two of them, on one DGX A100 (8 GPUs), batch 8 of 2048 tokens.
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/cost/plan_analysis.h"
#include "compiler/export/export.h"
#include "compiler/plan/plan_yaml.h"
#include "compiler/search/export_searched.h"
#include "compiler/strategies/megatron.h"
#include "compiler/analysis/transformer_structure.h"
#include "tests/compiler/search_test_util.h"
#include "tests/compiler/strategies_test_util.h"

namespace symtensor::compiler {
namespace {

constexpr double kHidden = 12288, kSeq = 2048;

Graph gpt3(long long vocab) {
  models::Overrides o;
  o.layers = 2, o.vocab = vocab;
  return symtensor::testing::zoo_graph("gpt3-175b", o, 8, kSeq);
}

Plan megatron(Graph& g, const hardware::Cluster& c, const std::string& knobs) {
  return make_megatron_plan(g, c, parse_megatron_knobs(knobs), StrategyOptions{});
}

NodeId lm_head(Graph& g) { return find_transformer_structure(g, node_iteration_spaces(g)).vocab_heads.back(); }

const OpWork& work_of(const PlanAnalysis& a, NodeId n) {
  for (const OpWork& w : a.ops)
    if (w.node == n) return w;
  throw std::runtime_error("no work for node " + std::to_string(n));
}

const ParamWork& param_of(Graph& g, const PlanAnalysis& a, const std::string& name) {
  for (const ParamWork& p : a.params)
    if (g.tensor(p.tensor).name == name) return p;
  throw std::runtime_error("no parameter " + name);
}

// The nodes the plan pads, by name, with their padded extents.
std::map<std::string, long long> padded_nodes(Graph& g, const Plan& p) {
  std::map<std::string, long long> out;
  for (NodeId n = 0; n < static_cast<NodeId>(g.nodes().size()); ++n)
    for (const auto& [loop, extent] : p.node_cuts[n].padded_extents) out[g.node(n).name] = extent;
  return out;
}

struct PaddedCase {
  int tp;
  long long padded;  // 50257 rounded up to a multiple of 128 x tp
};

class Gpt3VocabularyPadding : public ::testing::TestWithParam<PaddedCase> {};

TEST_P(Gpt3VocabularyPadding, PlansWithThePaddedVocabularyPricedPerRank) {
  const auto [tp, padded] = GetParam();
  ASSERT_EQ(megatron_padded_vocabulary(50257, 128, tp), padded);
  Graph g = gpt3(50257);
  const hardware::Cluster c = testing::dgx(1, 8);
  const Plan p = megatron(g, c, "tp=" + std::to_string(tp) + ",pp=1,mb=1");
  testing::expect_valid_plan(g, c, p);
  // The head, its tied weight's Transpose and the logits' Identity: the same padded vocabulary.
  const NodeId head = lm_head(g);
  const std::map<std::string, long long> pads = padded_nodes(g, p);
  EXPECT_EQ(pads.size(), 3u);
  for (const auto& [name, extent] : pads) EXPECT_EQ(extent, padded) << name;
  EXPECT_EQ(pads.count(g.node(head).name), 1u);

  const PlanAnalysis a = analyze_plan(g, c, p);
  const double rows = static_cast<double>(padded / tp);  // 12672 at tp=4, 6400 at tp=8
  const OpWork& w = work_of(a, head);
  // One micro-batch of one sample per data-parallel rank: 2048 tokens x 12288 x the rank's rows.
  EXPECT_DOUBLE_EQ(w.fwd_flops, 2 * kSeq * kHidden * rows);
  // bf16: the tokens' hidden states, the rank's rows of the tied weight, its logits.
  EXPECT_DOUBLE_EQ(w.fwd_bytes, 2 * (kSeq * kHidden + kHidden * rows + kSeq * rows));
  // The token embedding (tied to the head) holds the padded rows, split tp ways.
  EXPECT_DOUBLE_EQ(param_of(g, a, "transformer.wte.weight").local_elements, rows * kHidden);
}

INSTANTIATE_TEST_SUITE_P(Megatron, Gpt3VocabularyPadding, ::testing::Values(PaddedCase{4, 50688}, PaddedCase{8, 51200}),
                         [](const auto& info) { return "tp" + std::to_string(info.param.tp); });

// A vocabulary tp divides is planned and priced as it is: nothing padded, the head's work
// that of its own 51200 rows.
TEST(MegatronVocabularyPadding, DividedVocabularyIsNotPadded) {
  Graph g = gpt3(51200);
  const hardware::Cluster c = testing::dgx(1, 8);
  const Plan p = megatron(g, c, "tp=4,pp=1,mb=1");
  EXPECT_TRUE(padded_nodes(g, p).empty());
  const PlanAnalysis a = analyze_plan(g, c, p);
  EXPECT_DOUBLE_EQ(work_of(a, lm_head(g)).fwd_flops, 2 * kSeq * kHidden * 51200 / 4);
  EXPECT_DOUBLE_EQ(param_of(g, a, "transformer.wte.weight").local_elements, 51200 * kHidden / 4);
}

// The export carries the padding rule that gives the priced vocabulary, and the knob
// vocab_div (--make-vocab-size-divisible-by) is honoured by both.
TEST(MegatronVocabularyPadding, ExportCarriesThePaddingRule) {
  Graph g = gpt3(50257);
  const hardware::Cluster c = testing::dgx(1, 8);
  for (const auto& [knobs, div, padded, tp] : std::vector<std::tuple<std::string, int, long long, int>>{
           {"tp=4,pp=1,mb=1", 128, 50688, 4}, {"tp=8,pp=1,mb=1", 128, 51200, 8}, {"tp=4,pp=1,mb=1,vocab_div=64", 64, 50432, 4}}) {
    const Plan p = megatron(g, c, knobs);
    for (const auto& [name, extent] : padded_nodes(g, p)) EXPECT_EQ(extent, padded) << knobs << ": " << name;
    const ExportResult r = export_plan(ExportTarget::megatron, g, c, p);
    EXPECT_TRUE(r.exact()) << knobs << ": " << (r.exact() ? "" : r.not_expressible.front());
    EXPECT_EQ(r.recipe.padded_vocab, padded) << knobs;
    EXPECT_NE(r.config.find(fmt::format("--make-vocab-size-divisible-by {}\n", div)), std::string::npos) << r.config;
    EXPECT_NE(r.config.find(fmt::format("# vocabulary 50257 padded to {} (a multiple of {} x tp={}), as the plan is priced\n",
                                        padded, div, tp)),
              std::string::npos)
        << r.config;
    EXPECT_NE(export_plan(ExportTarget::nemo, g, c, p).config.find(fmt::format("make_vocab_size_divisible_by={},", div)),
              std::string::npos);
  }
  EXPECT_EQ(to_string(parse_megatron_knobs("tp=4,vocab_div=64")).find("vocab_div=64") != std::string::npos, true);
  EXPECT_EQ(megatron_vocab_divisor(50257, 50688, 4), 128);
  EXPECT_EQ(megatron_vocab_divisor(50257, 50432, 4), 64);
  EXPECT_EQ(megatron_vocab_divisor(50257, 50257, 4), 0);  // no multiple of 4
}

// plan.yaml records the padded extents (`padded: {loop: extent}`) and reads them back: the
// same plan, priced the same.
TEST(MegatronVocabularyPadding, PlanYamlRoundTrip) {
  Graph g = gpt3(50257);
  const hardware::Cluster c = testing::dgx(1, 8);
  const Plan p = megatron(g, c, "tp=4,pp=1,mb=1");
  const std::string text = plan_to_yaml(p, g, c);
  EXPECT_NE(text.find("padded: {n: 50688}"), std::string::npos);
  const Plan back = plan_from_yaml(text, "plan.yaml", g, c);
  EXPECT_EQ(back.node_cuts, p.node_cuts);
  EXPECT_DOUBLE_EQ(work_of(analyze_plan(g, c, back), lm_head(g)).fwd_flops, 2 * kSeq * kHidden * 12672);
  // Padded below the loop's own extent: refused in one line.
  std::string shrunk = text;
  shrunk.replace(shrunk.find("padded: {n: 50688}"), 18, "padded: {n: 50000}");
  const Plan bad = plan_from_yaml(shrunk, "plan.yaml", g, c);
  try {
    analyze_plan(g, c, bad);
    ADD_FAILURE() << "a padding below the extent was priced";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("is padded to 50000, below its extent 50257"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace symtensor::compiler
