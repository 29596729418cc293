// Determinism: the same inputs give byte-identical outputs — the zoo's ONNX files, the
// plan.yaml of every strategy (in one process, from separately imported graphs, whose
// GiNaC symbols get different serial numbers), and, through the binary, the files the
// commands write in separate processes (models, shard; compile when it exists).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include <onnx/onnx_pb.h>

#include "compiler/onnx_import/import.h"
#include "compiler/plan/plan_yaml.h"
#include "compiler/search/make_plan.h"
#include "compiler/search/symtensor_search.h"
#include "compiler/strategies/strategy.h"
#include "hardware/cluster.h"
#include "onnx_models/model_zoo.h"
#include "onnx_models/presets.h"

namespace {

using namespace symtensor;
namespace fs = std::filesystem;

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every regular file under `dir`, by relative path.
std::map<std::string, std::string> read_tree(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = read_bytes(e.path());
  return files;
}

class Scratch : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("symtensor_determinism_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

compiler::Graph import_tiny(const std::string& preset, const std::map<std::string, double>& bindings) {
  compiler::ImportOptions options;
  options.warn_opaque = false;
  options.bindings = bindings;
  return compiler::import_onnx_model(models::build_model(models::preset_config(preset)), preset, options);
}

// ---- ONNX from the zoo ----------------------------------------------------------------

using ZooDeterminism = Scratch;

TEST_F(ZooDeterminism, EveryTinyPresetSerializesIdentically) {
  for (const auto& name : models::preset_names()) {
    if (name.size() < 5 || name.substr(name.size() - 5) != "-tiny") continue;
    const models::ModelConfig config = models::preset_config(name);
    std::string a, b;
    ASSERT_TRUE(models::build_model(config).SerializeToString(&a));
    ASSERT_TRUE(models::build_model(config).SerializeToString(&b));
    EXPECT_FALSE(a.empty()) << name;
    EXPECT_TRUE(a == b) << name << ": two builds differ";
  }
}

TEST_F(ZooDeterminism, SavedFilesAreByteIdentical) {
  // Random weights come from the seed: same seed, same bytes; another seed, other bytes.
  const models::ModelConfig config = models::preset_config("llama2-7b-tiny");
  models::save_model(models::build_model(config), (dir_ / "a.onnx").string());
  models::save_model(models::build_model(config), (dir_ / "b.onnx").string());
  models::Overrides other;
  other.seed = config.seed + 1;
  models::save_model(models::build_model(models::apply_overrides(config, other)), (dir_ / "c.onnx").string());
  const std::string a = read_bytes(dir_ / "a.onnx");
  EXPECT_GT(a.size(), 1000u);
  EXPECT_TRUE(a == read_bytes(dir_ / "b.onnx"));
  EXPECT_FALSE(a == read_bytes(dir_ / "c.onnx")) << "the seed does not reach the weights";
}

// ---- plan.yaml ------------------------------------------------------------------------

struct PlanCase {
  std::string strategy, knobs;
};

std::string plan_yaml_of(const std::string& preset, const PlanCase& c, const hardware::Cluster& cluster) {
  compiler::Graph graph = import_tiny(preset, {{"batch", 16}, {"seq", 32}});
  compiler::StrategyOptions options;
  options.megatron = c.knobs;
  const compiler::Plan plan = c.strategy == "symtensor" ? compiler::symtensor_search(graph, cluster, options).plan
                                                        : compiler::make_plan(c.strategy, graph, cluster, options);
  return compiler::plan_to_yaml(plan, graph, cluster);
}

TEST(PlanDeterminism, SameInputsGiveTheSamePlanYaml) {
  const hardware::Cluster cluster = hardware::scale_cluster(hardware::load_cluster("dgx-a100"), 2, 4);  // 8 GPUs
  const PlanCase cases[] = {{"dp", ""}, {"zero3", ""}, {"megatron", "tp=4,pp=2,mb=1,sp=1"}, {"symtensor", ""}};
  for (const std::string preset : {"gpt-1.7b-tiny", "llama2-7b-tiny"}) {
    for (const auto& c : cases) {
      SCOPED_TRACE(preset + " " + c.strategy);
      std::string first;
      try {
        first = plan_yaml_of(preset, c, cluster);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "no plan: " << e.what();
        continue;
      }
      EXPECT_NE(first.find("format: symtensor-plan/1"), std::string::npos);
      // A second import (fresh symbols) and a third: the same text.
      EXPECT_EQ(first, plan_yaml_of(preset, c, cluster));
      EXPECT_EQ(first, plan_yaml_of(preset, c, cluster));
    }
  }
}

using PlanFileDeterminism = Scratch;

TEST_F(PlanFileDeterminism, WrittenTwiceReadBackWrittenAgain) {
  const hardware::Cluster cluster = hardware::scale_cluster(hardware::load_cluster("dgx-a100"), 2, 4);
  compiler::Graph graph = import_tiny("gpt-1.7b-tiny", {{"batch", 16}, {"seq", 32}});
  compiler::StrategyOptions options;
  options.megatron = "tp=2,pp=2,mb=2";
  const compiler::Plan plan = compiler::make_plan("megatron", graph, cluster, options);
  compiler::write_plan_yaml((dir_ / "a.yaml").string(), plan, graph, cluster);
  compiler::write_plan_yaml((dir_ / "b.yaml").string(), plan, graph, cluster);
  const std::string a = read_bytes(dir_ / "a.yaml");
  EXPECT_EQ(a, read_bytes(dir_ / "b.yaml"));
  EXPECT_FALSE(fs::exists(dir_ / "a.yaml.tmp"));
  // Round trip into a freshly imported graph, then out again: the same bytes.
  compiler::Graph again = import_tiny("gpt-1.7b-tiny", {{"batch", 16}, {"seq", 32}});
  const compiler::Plan back = compiler::read_plan_yaml((dir_ / "a.yaml").string(), again, cluster);
  EXPECT_EQ(a, compiler::plan_to_yaml(back, again, cluster));
}

// ---- the binary, in separate processes ----------------------------------------------------

using CommandDeterminism = Scratch;

int run(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()); }

bool binary_has(const std::string& subcommand) {
  return run(std::string(SYMTENSOR_BINARY) + " " + subcommand + " --help") == 0;
}

TEST_F(CommandDeterminism, ModelsWritesIdenticalFiles) {
  const std::string bin = SYMTENSOR_BINARY;
  for (const std::string preset : {"gpt-1.7b-tiny", "mixtral-8x7b-tiny", "resnet50-tiny", "gpt3-175b"}) {
    ASSERT_EQ(run(bin + " models " + preset + " -o " + (dir_ / "a.onnx").string()), 0) << preset;
    ASSERT_EQ(run(bin + " models " + preset + " -o " + (dir_ / "b.onnx").string()), 0) << preset;
    EXPECT_TRUE(read_bytes(dir_ / "a.onnx") == read_bytes(dir_ / "b.onnx")) << preset;
  }
}

TEST_F(CommandDeterminism, ShardWritesIdenticalFiles) {
  const std::string bin = SYMTENSOR_BINARY;
  if (!binary_has("shard")) GTEST_SKIP() << "no shard command in this binary";
  const std::string model = (dir_ / "m.onnx").string();
  ASSERT_EQ(run(bin + " models gpt-1.7b-tiny -o " + model), 0);
  const std::string args = " --pp 2 --tp 2 --dp 2 --bind batch=4,seq=8";
  ASSERT_EQ(run(bin + " shard " + model + " -o " + (dir_ / "a").string() + args), 0);
  ASSERT_EQ(run(bin + " shard " + model + " -o " + (dir_ / "b").string() + args), 0);
  const auto a = read_tree(dir_ / "a"), b = read_tree(dir_ / "b");
  EXPECT_GE(a.size(), 2u);
  EXPECT_TRUE(a == b) << "shard outputs differ between runs";
}

TEST_F(CommandDeterminism, CompileWritesIdenticalPlans) {
  const std::string bin = SYMTENSOR_BINARY;
  if (!binary_has("compile")) GTEST_SKIP() << "no compile command in this binary yet";
  const std::string model = (dir_ / "m.onnx").string();
  ASSERT_EQ(run(bin + " models llama2-7b-tiny -o " + model), 0);
  for (const std::string strategy : {"symtensor", "megatron", "dp", "zero3"}) {
    const std::string args = " --cluster dgx-a100 --gpus 8 --bind batch=16,seq=32 --strategy " + strategy + " -o ";
    ASSERT_EQ(run(bin + " compile " + model + args + (dir_ / ("a_" + strategy)).string()), 0) << strategy;
    ASSERT_EQ(run(bin + " compile " + model + args + (dir_ / ("b_" + strategy)).string()), 0) << strategy;
    const auto a = read_tree(dir_ / ("a_" + strategy)), b = read_tree(dir_ / ("b_" + strategy));
    EXPECT_FALSE(a.empty()) << strategy;
    EXPECT_TRUE(a == b) << strategy << ": compile outputs differ between runs";
  }
}

}  // namespace
