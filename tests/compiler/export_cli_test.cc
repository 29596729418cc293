// `symtensor export PLAN --to T -o F` needs nothing but the plan (#30): plan.yaml records the
// model (absolute, with its SHA-256), the cluster, stack and bindings; options given on the
// command line win with a one-line notice; a model changed since the plan is refused in one
// line with nothing written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "compiler/plan/plan_inputs.h"
#include "compiler/plan/plan_yaml.h"
#include "compiler/plan/sha256.h"
#include "compiler/search/make_plan.h"
#include "compiler/strategies/strategy.h"
#include "tests/compiler/cli_test_util.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

namespace fs = std::filesystem;

using ExportCli = symtensor::testing::CliTest;

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(std::string(1000, 'a')), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

TEST(PlanInputsYaml, RoundTrips) {
  Graph g = symtensor::testing::zoo_graph("llama2-7b-tiny", {}, 16, 32);
  const hardware::Cluster c = symtensor::testing::cluster_of("dgx-a100", 1, 4);
  Plan plan = make_plan("dp", g, c, StrategyOptions{});
  plan.inputs.model = "/data/m.onnx", plan.inputs.model_sha256 = "ab12", plan.inputs.cluster = "dgx-a100";
  plan.inputs.nodes = 1, plan.inputs.gpus = 4, plan.inputs.devices = 4, plan.inputs.stack = "torchtitan";
  plan.inputs.memory_headroom = 0.1, plan.inputs.bind = "batch=16,seq=32", plan.inputs.seq_dim = "seq";
  const std::string text = plan_to_yaml(plan, g, c);
  EXPECT_EQ(plan_from_yaml(text, "p.yaml", g, c).inputs, plan.inputs);
  // An unknown key under inputs: one line naming it.
  std::string bad = text;
  bad.replace(bad.find("model_sha256:"), 13, "model_sha512:");
  try {
    plan_from_yaml(bad, "p.yaml", g, c);
    FAIL() << "unknown key accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("key 'inputs.model_sha512': unknown key"), std::string::npos) << e.what();
  }
}

TEST_F(ExportCli, ThePlanIsTheWholeInput) {
  ASSERT_EQ(run("models llama2-70b-tiny -o " + path("m.onnx")), 0) << err_;
  ASSERT_EQ(run("compile " + path("m.onnx") + " --cluster dgx-a100 --nodes 2 --gpus 4 --bind batch=16,seq=32 "
                "--megatron tp=2,pp=2,sp=1 -o " + path("c")), 0) << err_;
  const std::string plan = text_of(path("c/plan.yaml"));
  EXPECT_NE(plan.find("model_sha256: " + sha256_file(path("m.onnx"))), std::string::npos);
  EXPECT_NE(plan.find("cluster: {profile: dgx-a100, nodes: 2, gpus: 4, devices: 8}"), std::string::npos);
  EXPECT_NE(plan.find("bind: batch=16,seq=32"), std::string::npos);

  // From another folder, nothing but the plan.
  const fs::path here = fs::current_path();
  fs::current_path(fs::temp_directory_path());
  const int status = run("export " + path("c/plan.yaml") + " --to megatron -o " + path("m.args"));
  fs::current_path(here);
  ASSERT_EQ(status, 0) << err_;
  EXPECT_EQ(err_, "");
  const std::string args = text_of(path("m.args"));
  EXPECT_NE(args.find("--hidden-size 64\n"), std::string::npos) << args;
  EXPECT_NE(args.find("--tensor-model-parallel-size 2\n"), std::string::npos);
  EXPECT_NE(args.find("--nnodes 2 --nproc-per-node 4"), std::string::npos);
  EXPECT_NE(out_.find("expressed         exact"), std::string::npos) << out_;

  // An option that differs from the plan wins, with one notice line; an equal one says nothing.
  ASSERT_EQ(run("export " + path("c/plan.yaml") + " --to megatron --nodes 2 --stack torchtitan -o " + path("t.args")), 0) << err_;
  EXPECT_EQ(err_, "symtensor: note: --stack torchtitan differs from the plan's megatron (the command line wins)\n");

  // The model changed since: refused in one line, nothing written.
  std::ofstream(path("m.onnx"), std::ios::app) << " ";
  EXPECT_NE(run("export " + path("c/plan.yaml") + " --to megatron -o " + path("x.args")), 0);
  EXPECT_NE(err_.find("key 'inputs.model_sha256'"), std::string::npos) << err_;
  EXPECT_EQ(std::count(err_.begin(), err_.end(), '\n'), 1) << err_;
  EXPECT_FALSE(fs::exists(path("x.args")));
}

// A plan priced for torchtitan is simulated under torchtitan unless --stack says otherwise
// (then with a notice), and another cluster than the plan's gets a notice.
TEST_F(ExportCli, SimulateAPlanUnderTheStackItWasPricedFor) {
  ASSERT_EQ(run("models llama2-70b-tiny -o " + path("m.onnx")), 0) << err_;
  const std::string model = path("m.onnx") + " --bind batch=16,seq=32 ";
  ASSERT_EQ(run("compile " + model + "--cluster dgx-a100 --nodes 1 --gpus 4 --stack torchtitan --megatron tp=2 -o " + path("c")), 0)
      << err_;
  ASSERT_EQ(run("simulate " + model + "--cluster dgx-a100 --nodes 1 --gpus 4 --plan " + path("c/plan.yaml") + " --json"), 0) << err_;
  EXPECT_EQ(err_, "");
  const std::string planned = out_;
  ASSERT_EQ(run("simulate " + model + "--cluster dgx-a100 --nodes 1 --gpus 4 --stack torchtitan --megatron tp=2 --json"), 0) << err_;
  EXPECT_EQ(planned, out_);  // the same stack's conventions and kernels
  ASSERT_EQ(run("simulate " + model + "--cluster dgx-a100 --nodes 1 --gpus 4 --stack megatron --plan " + path("c/plan.yaml") + " --json"),
            0);
  EXPECT_EQ(err_, "symtensor: note: --stack megatron differs from the plan's torchtitan (the command line wins)\n");
  EXPECT_NE(planned, out_);
  ASSERT_EQ(run("simulate " + model + "--cluster dgx-h100 --nodes 1 --gpus 4 --plan " + path("c/plan.yaml") + " --json"), 0);
  EXPECT_EQ(err_, "symtensor: note: --cluster dgx-h100 differs from the plan's dgx-a100 (the plan is priced on dgx-h100)\n");
}

TEST_F(ExportCli, APlanWithoutInputsNeedsModelAndCluster) {
  ASSERT_EQ(run("models llama2-70b-tiny -o " + path("m.onnx")), 0) << err_;
  ASSERT_EQ(run("compile " + path("m.onnx") + " --cluster dgx-a100 --gpus 4 --bind batch=16,seq=32 --megatron tp=2 -o " +
                path("c")), 0) << err_;
  // As written before plan.yaml recorded its inputs.
  std::string plan = text_of(path("c/plan.yaml"));
  const auto begin = plan.find("inputs:\n"), end = plan.find("mesh:\n");
  ASSERT_NE(begin, std::string::npos);
  plan.erase(begin, end - begin);
  std::ofstream(dir_ / "c" / "plan.yaml") << plan;
  EXPECT_NE(run("export " + path("c/plan.yaml") + " --to megatron -o " + path("x.args")), 0);
  EXPECT_NE(err_.find("records no inputs"), std::string::npos) << err_;
  EXPECT_EQ(run("export " + path("c/plan.yaml") + " --model " + path("m.onnx") +
                " --cluster dgx-a100 --gpus 4 --bind batch=16,seq=32 --to megatron -o " + path("y.args")), 0) << err_;
}

}  // namespace
}  // namespace symtensor::compiler
