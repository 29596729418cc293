// Megatron-best for a vision-language model as Megatron MIMO runs it (issue #32,
// compiler/report/mimo.h): the step of two GPU groups by hand, LLaVA cut where the projector
// hands its embeddings to the decoder, the splits of a cluster, and the search's choice
// priced by the same arithmetic.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "onnx_models/model_zoo.h"  // protobuf before GiNaC (CLN's Mutable macro)
#include "compiler/analysis/model_stats.h"
#include "compiler/onnx_import/import.h"
#include "compiler/report/compare.h"
#include "compiler/cost/kernel_precision.h"
#include "compiler/report/mimo.h"
#include "hardware/cluster.h"
#include "tests/compiler/search_test_util.h"
#include "onnx_models/presets.h"
#include "tests/temp_path.h"

namespace symtensor::compiler {
namespace {

Graph mimo_test_llava(std::int64_t tiles, double batch, double seq) {
  models::Overrides o;
  o.image_tiles = tiles;
  return symtensor::testing::zoo_graph("llava-1.5-7b", o, batch, seq);
}

TEST(MimoVlm, StepIsTheSlowerSidePlusOneMicroBatchOfTheOtherAndTheHandOffs) {
  // The language model slower: 1.0 + 0.2 / 4 + 2 x 0.08 / 4 = 1.09 s.
  EXPECT_DOUBLE_EQ(mimo_step_seconds({0.2, 1.0, 4, 0.08}), 1.09);
  // The encoder slower: 1.2 + 1.0 / 2 + 2 x 0.1 / 2 = 1.8 s.
  EXPECT_DOUBLE_EQ(mimo_step_seconds({1.2, 1.0, 2, 0.1}), 1.8);
  // The links slower than both sides: 0.5 + 0.1 / 1 + 2 x 0.5 / 1 = 1.6 s.
  EXPECT_DOUBLE_EQ(mimo_step_seconds({0.1, 0.2, 1, 0.5}), 1.6);
  // More micro-batches hide more of the faster side: 1.0 + 0.2 / 16 + 2 x 0.08 / 16 = 1.0225 s.
  EXPECT_DOUBLE_EQ(mimo_step_seconds({0.2, 1.0, 16, 0.08}), 1.0225);
}

TEST(MimoVlm, LlavaSplitsWhereTheProjectorHandsOverAndKeepsEveryFlop) {
  const double batch = 2, seq = 4096;
  const std::int64_t tiles = 5, tokens = tiles * 576, hidden = 4096;
  Graph g = mimo_test_llava(tiles, batch, seq);
  std::optional<ModalitySplit> split = split_modalities(g);
  ASSERT_TRUE(split.has_value());
  // The projected image features: batch x 2,880 x 4,096 values, handed over in bf16 (2 bytes each).
  EXPECT_DOUBLE_EQ(split->boundary_elements, batch * tokens * hidden);
  EXPECT_EQ(activation_bytes(hardware::Precision::bf16), 2);
  ASSERT_EQ(split->encoder.outputs.size(), 1u);
  const std::string features = split->encoder.tensor(split->encoder.outputs[0]).name;
  EXPECT_NE(features.find("multi_modal_projector/"), std::string::npos) << features;
  bool handed = false, pixels = false;
  for (TensorId t : split->language.inputs) {
    handed |= split->language.tensor(t).name == features;
    pixels |= split->language.tensor(t).name == "pixel_values";
  }
  EXPECT_TRUE(handed) << "the language model reads the projector's output as an input";
  EXPECT_FALSE(pixels);
  int vision_in_language = 0, decoder_in_encoder = 0;
  for (const Node& n : split->language.nodes()) vision_in_language += n.name.find("vision_tower/") != std::string::npos;
  for (const Node& n : split->encoder.nodes()) decoder_in_encoder += n.name.find("/layers.") != std::string::npos &&
                                                                     n.name.find("vision_tower/") == std::string::npos;
  EXPECT_EQ(vision_in_language, 0);
  EXPECT_EQ(decoder_in_encoder, 0);
  // Every GEMM FLOP is on exactly one side.
  const auto gemm = [](Graph& graph) { return *graph.symbols.evaluate(compute_model_stats(graph).gemm_flops); };
  EXPECT_DOUBLE_EQ(gemm(split->encoder) + gemm(split->language), gemm(g));
  // The projector's two GEMMs and the tower's are the encoder's: 358.8 GFLOP a tile (llava_vlm_test.cc).
  EXPECT_NEAR(gemm(split->encoder) / (batch * tiles), 358.8e9, 0.1e9);
}

TEST(MimoVlm, NoVisionTowerNoSplit) {
  ImportOptions io;
  io.bindings = {{"batch", 2}, {"seq", 128}};
  io.warn_opaque = false;
  Graph g = import_onnx_model(models::build_model(models::preset_config("llama2-7b-tiny")), "llama", io);
  EXPECT_FALSE(split_modalities(g).has_value());
}

TEST(MimoVlm, SplitsOfFourNodesOfEight) {
  const hardware::Cluster c = hardware::scale_cluster(hardware::load_cluster("dgx-h100"), 4, std::nullopt);
  const std::vector<MimoSplitChoice> splits = mimo_splits(c);
  ASSERT_EQ(splits.size(), 7u + 3u);  // 1..7 GPUs of every node, then 1..3 whole nodes
  EXPECT_EQ(splits[0].encoder_cluster.num_devices(), 4);
  EXPECT_EQ(splits[0].language_cluster.num_devices(), 28);
  // One encoder GPU a node: four NVLink links carry the hand-off.
  EXPECT_DOUBLE_EQ(splits[0].link_bytes_per_s, 4 * c.levels.front().bandwidth);
  EXPECT_EQ(splits[7].encoder_cluster.num_devices(), 8);
  EXPECT_EQ(splits[7].language_cluster.num_devices(), 24);
  // One node against three: its eight NICs carry it.
  EXPECT_DOUBLE_EQ(splits[7].link_bytes_per_s, 8 * c.levels.back().bandwidth);
  for (const auto& s : splits)
    EXPECT_EQ(s.encoder_cluster.num_devices() + s.language_cluster.num_devices(), 32) << s.where;
}

// On a mesh (MI300X: 7 links of 64 GB/s) a GPU reaches the other side only over its links to
// those GPUs: g x (8 - g) links a node, never a GPU's whole egress.
TEST(MimoVlm, MeshSplitsUseTheLinksBetweenTheSides) {
  const hardware::Cluster c = hardware::scale_cluster(hardware::load_cluster("mi300x"), 2, std::nullopt);
  const std::vector<MimoSplitChoice> splits = mimo_splits(c);
  ASSERT_GE(splits.size(), 7u);
  const double link = c.levels.front().bandwidth / 7;
  EXPECT_DOUBLE_EQ(splits[0].link_bytes_per_s, 2 * 1 * 7 * link);  // one encoder GPU a node: its 7 links
  EXPECT_DOUBLE_EQ(splits[1].link_bytes_per_s, 2 * 2 * 6 * link);  // two: 12 links a node
  EXPECT_DOUBLE_EQ(splits[3].link_bytes_per_s, 2 * 4 * 4 * link);  // four against four: 16 links
  EXPECT_DOUBLE_EQ(splits[6].link_bytes_per_s, 2 * 7 * 1 * link);
}

// On a mixed fleet each group may hold the tower and each other the decoder, the embeddings
// handed over the link between the two groups (the slower NIC's by default).
TEST(MimoVlm, FleetSplitsPutEachSideOnAGroupOfItsOwn) {
  const hardware::Cluster c = hardware::load_cluster("dgx-h100x1+pcie-l4x2");
  const std::vector<MimoSplitChoice> splits = mimo_splits(c);
  ASSERT_EQ(splits.size(), 2u);
  EXPECT_EQ(splits[0].where, "the 8 dgx-h100 GPUs");
  EXPECT_EQ(splits[0].language_where, "the 16 pcie-l4 GPUs");
  EXPECT_EQ(splits[1].where, "the 16 pcie-l4 GPUs");
  EXPECT_EQ(splits[1].language_where, "the 8 dgx-h100 GPUs");
  EXPECT_EQ(splits[1].encoder_cluster.device.name, c.groups[1].device.name);
  EXPECT_EQ(splits[1].language_cluster.device.name, c.groups[0].device.name);
  EXPECT_FALSE(splits[1].encoder_cluster.mixed());
  EXPECT_EQ(splits[1].encoder_cluster.num_devices(), 16);
  EXPECT_EQ(splits[1].language_cluster.num_devices(), 8);
  // Eight GPUs of each side talk over the link between the groups, by default the slower of
  // the two groups' NICs (per GPU, per direction).
  const double link = c.link_between(0, 1)->bandwidth;
  EXPECT_DOUBLE_EQ(link, std::min(c.groups[0].levels.back().bandwidth, c.groups[1].levels.back().bandwidth));
  for (const auto& s : splits) EXPECT_DOUBLE_EQ(s.link_bytes_per_s, 8 * link) << s.where;
  // A fleet that states no link between two groups cannot be split: one line naming them.
  hardware::Cluster unlinked = c;
  unlinked.group_links.clear();
  try {
    mimo_splits(unlinked);
    ADD_FAILURE() << "a fleet without links was split";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no link between dgx-h100 and pcie-l4"), std::string::npos) << e.what();
  }
}

// The row's MFU over a fleet's peaks: each side's model FLOPs at its own GPUs' peak, over the
// step at every GPU's.
TEST(MimoVlm, FleetRowsMfuIsOverEveryGroupsPeak) {
  const double batch = 16;
  Graph g = mimo_test_llava(5, batch, 4096);
  const hardware::Cluster c = hardware::load_cluster("dgx-h100x1+pcie-l4x1");
  const MimoResult r = mimo_search(g, c, StrategyOptions{});
  // The decoder on the H100s, the tower on the L4s.
  EXPECT_EQ(r.split.language_cluster.device.name, c.groups[0].device.name);
  EXPECT_EQ(r.split.encoder_cluster.device.name, c.groups[1].device.name);
  EXPECT_NE(r.label.find(" language on the 8 dgx-h100 GPUs "), std::string::npos) << r.label;
  const StrategyResult s = mimo_strategy_result(g, c, StrategyOptions{}, false, 4096);
  ASSERT_TRUE(s.ok);
  const auto p = r.language.plan.precision;
  const double peak_e = hardware::total_peak(r.split.encoder_cluster, p), peak_l = hardware::total_peak(r.split.language_cluster, p);
  EXPECT_DOUBLE_EQ(hardware::total_peak(c, p), peak_e + peak_l);
  EXPECT_NE(peak_e, peak_l);  // 8 H100s against 8 L4s
  EXPECT_NEAR(s.estimate.mfu,
              (r.encoder.estimate.mfu * peak_e * r.times.encoder_s + r.language.estimate.mfu * peak_l * r.times.language_s) /
                  ((peak_e + peak_l) * r.step_s),
              1e-12);
  // Each side's stages against their own GPUs' memory (the tower's on the L4s), the row's peak
  // and capacity one stage's.
  const std::size_t encoder_stages = r.encoder.estimate.stage_peak_memory.size();
  ASSERT_EQ(s.estimate.stage_memory_capacity.size(), encoder_stages + r.language.estimate.stage_peak_memory.size());
  for (std::size_t st = 0; st < s.estimate.stage_memory_capacity.size(); ++st)
    EXPECT_EQ(s.estimate.stage_memory_capacity[st], st < encoder_stages ? r.encoder.estimate.stage_capacity(st)
                                                                        : r.language.estimate.stage_capacity(st - encoder_stages));
  EXPECT_LT(r.encoder.estimate.memory_capacity, r.language.estimate.memory_capacity);  // 24 GB L4s, 80 GB H100s
  const std::size_t tightest = s.tightest_stage();
  EXPECT_EQ(s.peak_memory_bytes(), s.estimate.stage_peak_memory[tightest]);
  EXPECT_EQ(s.memory_capacity_bytes, s.estimate.stage_memory_capacity[tightest]);
}

TEST(MimoVlm, SearchPricesItsChoiceByTheStepArithmetic) {
  const double batch = 8;
  Graph g = mimo_test_llava(5, batch, 4096);
  const hardware::Cluster c = hardware::scale_cluster(hardware::load_cluster("dgx-h100"), 1, 4);
  const MimoResult r = mimo_search(g, c, StrategyOptions{});
  EXPECT_EQ(r.split.encoder_cluster.num_devices() + r.split.language_cluster.num_devices(), 4);
  EXPECT_DOUBLE_EQ(r.times.encoder_s, r.encoder.estimate.step_time_s);
  EXPECT_DOUBLE_EQ(r.times.language_s, r.language.estimate.step_time_s);
  EXPECT_EQ(r.times.micro_batches, r.language.plan.micro_batches);
  EXPECT_DOUBLE_EQ(r.times.handoff_s, batch * 2880 * 4096 * 2.0 / r.split.link_bytes_per_s);  // bf16 embeddings
  const double slower = std::max(r.times.encoder_s, r.times.language_s), faster = std::min(r.times.encoder_s, r.times.language_s);
  EXPECT_DOUBLE_EQ(r.step_s, std::max(slower, r.times.handoff_s) + faster / r.times.micro_batches +
                                 2 * r.times.handoff_s / r.times.micro_batches);
  // Of 1/3, 2/2 and 3/1 GPUs: one decoder GPU would carry ~20x the tower's work alone; three
  // run the decoder as Megatron-LM's uneven pipeline (tp divides neither 3 nor, at 3, the 32
  // heads; dp = 1 takes the 8 samples; 32 layers as 11/11/10), the tower on the fourth GPU.
  EXPECT_EQ(r.split.language_cluster.num_devices(), 3);
  EXPECT_EQ(r.language.plan.pipeline_stages(), 3);
  EXPECT_TRUE(r.encoder.estimate.fits && r.language.estimate.fits);
  // compare's row: the same step, the batch over it.
  const StrategyResult s = mimo_strategy_result(g, c, StrategyOptions{}, false, 4096);
  ASSERT_TRUE(s.ok);
  EXPECT_DOUBLE_EQ(s.step_time_s(), r.step_s);
  EXPECT_DOUBLE_EQ(s.samples_per_s(), batch / r.step_s);
}

// SymTensor's per-module placement: the same splits, each side also planned by the SymTensor
// search. Its candidates include Megatron-MIMO's, so it is never slower; its label says which
// search planned each side.
TEST(MimoVlm, SymtensorMimoAddsTheSearchsPlanOfEachSideAndIsNeverSlower) {
  const double batch = 8;
  Graph g = mimo_test_llava(5, batch, 4096);
  const hardware::Cluster c = hardware::scale_cluster(hardware::load_cluster("dgx-h100"), 1, 4);
  const MimoResult megatron = mimo_search(g, c, StrategyOptions{});
  const MimoResult symtensor = mimo_search(g, c, StrategyOptions{}, kSymtensorMimoStrategy);
  EXPECT_LE(symtensor.step_s, megatron.step_s);
  // The SymTensor search ran on both sides of every split, beside Megatron-best's searches.
  EXPECT_GT(symtensor.evaluations, megatron.evaluations);
  EXPECT_EQ(symtensor.label.rfind("symtensor-mimo vision on ", 0), 0u) << symtensor.label;
  EXPECT_EQ(megatron.label.rfind("megatron-mimo vision on ", 0), 0u) << megatron.label;
  for (const EvaluatedPlan* side : {&symtensor.encoder, &symtensor.language}) {
    const bool by_search = side->label.rfind("symtensor ", 0) == 0, by_megatron = side->label.rfind("megatron ", 0) == 0;
    EXPECT_TRUE(by_search || by_megatron) << side->label;
    EXPECT_NE(symtensor.label.find(side->label), std::string::npos) << symtensor.label;
  }
  // Priced by the same arithmetic as megatron-mimo's choice.
  EXPECT_DOUBLE_EQ(symtensor.times.encoder_s, symtensor.encoder.estimate.step_time_s);
  EXPECT_DOUBLE_EQ(symtensor.times.language_s, symtensor.language.estimate.step_time_s);
  EXPECT_DOUBLE_EQ(symtensor.step_s, mimo_step_seconds(symtensor.times));
  const StrategyResult s = mimo_strategy_result(g, c, StrategyOptions{}, false, 4096, kSymtensorMimoStrategy);
  ASSERT_TRUE(s.ok);
  EXPECT_EQ(s.strategy, kSymtensorMimoStrategy);
  EXPECT_DOUBLE_EQ(s.step_time_s(), symtensor.step_s);
  // Known where a MIMO row can be made (compare, the quality suite), not elsewhere (sweep).
  EXPECT_NO_THROW(check_compare_strategy(kSymtensorMimoStrategy, "--strategies", true));
  EXPECT_THROW(check_compare_strategy(kSymtensorMimoStrategy, "--strategies", false), std::runtime_error);
  EXPECT_THROW(mimo_search(g, c, StrategyOptions{}, "symtensor"), std::logic_error);
}

// compare's two MIMO rows plan Megatron-best's side plans once (MimoSidePlans): the second row
// adds only the SymTensor search's plans and finds what it finds alone.
TEST(MimoVlm, MimoRowsShareTheirMegatronSidePlans) {
  Graph g = mimo_test_llava(5, 8, 4096);
  const hardware::Cluster c = hardware::scale_cluster(hardware::load_cluster("dgx-h100"), 1, 4);
  MimoSidePlans shared;
  const MimoResult megatron = mimo_search(g, c, StrategyOptions{}, kMimoStrategy, &shared);
  const MimoResult megatron_alone = mimo_search(g, c, StrategyOptions{});
  EXPECT_EQ(megatron.label, megatron_alone.label);
  EXPECT_EQ(megatron.evaluations, megatron_alone.evaluations);
  const std::map<std::string, MimoSidePlans::Outcome> before = shared.by_key;
  ASSERT_FALSE(before.empty());
  const MimoResult symtensor = mimo_search(g, c, StrategyOptions{}, kSymtensorMimoStrategy, &shared);
  const MimoResult symtensor_alone = mimo_search(g, c, StrategyOptions{}, kSymtensorMimoStrategy);
  EXPECT_EQ(symtensor.label, symtensor_alone.label);
  EXPECT_EQ(symtensor.step_s, symtensor_alone.step_s);
  EXPECT_EQ(symtensor.evaluations, symtensor_alone.evaluations);  // counted as if searched again
  // ... and so is their time: the Megatron side plans' searches, made by the first call.
  EXPECT_EQ(megatron.reused_search_s, 0);
  EXPECT_EQ(symtensor_alone.reused_search_s, 0);
  double megatron_side_searches = 0;
  for (const auto& [key, outcome] : before) megatron_side_searches += outcome.search_time_s;
  EXPECT_GT(symtensor.reused_search_s, 0);
  EXPECT_LE(symtensor.reused_search_s, megatron_side_searches + 1e-12);
  int added = 0;
  for (const auto& [key, outcome] : shared.by_key) {
    if (before.count(key)) continue;
    ++added;
    EXPECT_NE(key.find("\nsymtensor\n"), std::string::npos) << "a Megatron side plan made again: " << key;
  }
  EXPECT_GT(added, 0);
}

// On a fleet of three groups each group's plan of a side serves every split that puts the side
// there: searched and counted once (the call's evaluations are its side plans').
TEST(MimoVlm, AGroupsSidePlanIsSearchedAndCountedOnce) {
  Graph g = mimo_test_llava(5, 16, 4096);
  const hardware::Cluster c = hardware::load_cluster("dgx-h100x1+pcie-l4x1+dgx-a100x1");
  ASSERT_EQ(mimo_splits(c).size(), 6u);  // each group for the tower, each other for the decoder
  MimoSidePlans shared;
  const MimoResult r = mimo_search(g, c, StrategyOptions{}, kMimoStrategy, &shared);
  int searched = 0, vision = 0, towers_fitting = 0;
  for (const auto& [key, outcome] : shared.by_key) {
    searched += outcome.evaluations;
    const bool tower = key.rfind("vision\n", 0) == 0;
    vision += tower;
    towers_fitting += tower && outcome.plan.has_value();
  }
  // With the tower fitting on two groups or more, some group's decoder plans serve two splits.
  ASSERT_GE(towers_fitting, 2);
  EXPECT_EQ(r.evaluations, searched);
  EXPECT_EQ(vision, 3);                          // one tower plan per group, not per split
  EXPECT_LE(shared.by_key.size(), 3u + 3u * 2);  // and at most two decoder plans per group
}

TEST(MimoVlm, CompareSimulatesEachSideOnItsOwnGpusAndRefusesAModelWithoutATower) {
  models::Overrides o;
  o.image_tiles = 5;
  models::ModelConfig config = models::apply_overrides(models::preset_config("llava-1.5-7b"), o);
  config.weights = models::Weights::none;
  const std::string llava = symtensor::testing::temp_path("mimo_llava.onnx");
  models::save_model(models::build_model(config), llava);
  CompareOptions options;
  options.model = llava;
  options.bind = "batch=8,seq=4096";
  options.strategies = {kMimoStrategy, "megatron"};
  const hardware::Cluster c = hardware::scale_cluster(hardware::load_cluster("dgx-h100"), 1, 4);
  const CompareResults r = run_compare(options, c);
  const StrategyResult& mimo = r.strategies.at(0);
  ASSERT_TRUE(mimo.ok) << mimo.error;
  ASSERT_TRUE(mimo.simulated) << mimo.simulation_error;
  EXPECT_TRUE(mimo.fits());
  EXPECT_EQ(mimo.simulation.devices, 4);
  EXPECT_DOUBLE_EQ(mimo.samples_per_s(), 8 / mimo.step_time_s());
  // Every stage of both sides, named by its side.
  int vision = 0, language = 0;
  for (const auto& st : mimo.simulation.stages) {
    vision += st.name.rfind("vision ", 0) == 0;
    language += st.name.rfind("language ", 0) == 0;
  }
  EXPECT_GE(vision, 1);
  EXPECT_GE(language, 1);
  // The simulation and the estimate put the two sides together alike: within 15%.
  EXPECT_NEAR(mimo.simulation.step_time_s / mimo.estimate.step_time_s, 1.0, 0.15);
  std::filesystem::remove(llava);

  models::ModelConfig llama = models::preset_config("llama2-7b-tiny");
  llama.weights = models::Weights::none;
  const std::string plain = symtensor::testing::temp_path("mimo_llama.onnx");
  models::save_model(models::build_model(llama), plain);
  options.model = plain;
  options.bind = "batch=8,seq=128";
  options.simulate = false;
  const CompareResults n = run_compare(options, c);
  EXPECT_FALSE(n.strategies.at(0).ok);
  EXPECT_NE(n.strategies.at(0).error.find("no vision tower"), std::string::npos) << n.strategies.at(0).error;
  EXPECT_TRUE(n.strategies.at(1).ok);
  std::filesystem::remove(plain);
}

}  // namespace
}  // namespace symtensor::compiler
