// The command line as a newcomer meets it (#34): compile prints tokens/s and says when a step
// is impractical, a plan edited to micro-batches that do not divide its batch says so in
// one line naming the key, sweep takes one's own prices, profile names in any case (and a plan
// simulated on another profile than its own says so).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "compiler/base/units.h"
#include "hardware/cluster.h"
#include "tests/compiler/cli_test_util.h"
#include "tests/compiler/report_test_util.h"

namespace symtensor::compiler {
namespace {

class NewcomerCli : public symtensor::testing::CliTest {
 protected:
  static std::string model() { return symtensor::testing::tiny_gpt_path(); }
};

TEST(ImpracticalStep, SaidPastTenMinutes) {
  EXPECT_EQ(describe_impractical_step(1.2), "");
  EXPECT_EQ(describe_impractical_step(600), "");
  EXPECT_EQ(describe_impractical_step(4 * 3600.0), "impractical: 4.0 h per step, 10,000 steps in 1666.7 days");
}

TEST_F(NewcomerCli, CompilePrintsTokensPerSecondAndMfu) {
  ASSERT_EQ(run("compile " + model() + " --cluster dgx-a100 --gpus 4 --bind batch=16,seq=32 -o " + path("c")), 0) << err_;
  EXPECT_TRUE(std::regex_search(out_, std::regex(R"(\nthroughput +[0-9.]+ [KMG]?tokens/s \([0-9.]+ [KMG]?samples/s\)\n)")))
      << out_;
  EXPECT_TRUE(std::regex_search(out_, std::regex(R"(\nMFU +[0-9.]+ ?%\n)"))) << out_;
  EXPECT_EQ(out_.find("impractical"), std::string::npos) << out_;
  EXPECT_EQ(out_.find("0.00 samples/s"), std::string::npos) << out_;
}

// A batch of ten billion samples of the tiny GPT on 4 GPUs: over an hour per step, said so.
TEST_F(NewcomerCli, CompileSaysWhenAStepIsImpractical) {
  ASSERT_EQ(run("compile " + model() + " --cluster dgx-a100 --gpus 4 --bind batch=10000000000,seq=32 --strategy dp "
                "--allow-oom -o " + path("c")),
            0)
      << err_;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out_, m, std::regex(R"(\nstep time +([^\n]*)\n)"))) << out_;
  EXPECT_NE(m[1].str().find(" (impractical: "), std::string::npos) << m[1];
  EXPECT_NE(m[1].str().find(" per step, 10,000 steps in "), std::string::npos) << m[1];
}

// simulate says it too, and states tokens/s as compile does (it printed "1.8e+03 s" and
// "5.552e+06 samples/s, 1.777e+08 tokens/s").
TEST_F(NewcomerCli, SimulateSaysWhenAStepIsImpractical) {
  ASSERT_EQ(run("simulate " + model() + " --cluster dgx-a100 --gpus 4 --bind batch=10000000000,seq=32 --strategy dp"), 0)
      << err_;
  EXPECT_TRUE(std::regex_search(
      out_, std::regex(R"(\nstep time: [0-9,]+ s \(impractical: [0-9]+ min per step, 10,000 steps in [0-9.]+ days\)\n)")))
      << out_;
  EXPECT_TRUE(std::regex_search(out_, std::regex(R"(\nthroughput: [0-9.]+ Mtokens/s \([0-9.]+ Msamples/s\)\n)"))) << out_;
}

// compile's memory part by part lists the activations by the layer's parts (was ONNX op types).
TEST_F(NewcomerCli, CompileListsActivationsByTheLayersParts) {
  ASSERT_EQ(run("compile " + model() + " --cluster dgx-a100 --gpus 4 --bind batch=16,seq=32 --strategy dp -o " + path("c")), 0)
      << err_;
  const std::size_t from = out_.find("activations saved for backward"), to = out_.find("transient: working buffers");
  ASSERT_NE(from, std::string::npos) << out_;
  ASSERT_NE(to, std::string::npos) << out_;
  const std::string section = out_.substr(from, to - from);
  const std::regex line(R"(\n      (\S(?:\S| \S)*) +[0-9.]+ [KMG]?i?B  per micro-batch)");
  std::vector<std::string> named;
  for (auto it = std::sregex_iterator(section.begin(), section.end(), line); it != std::sregex_iterator(); ++it)
    named.push_back((*it)[1]);
  const std::vector<std::string> parts = {"embedding", "attention", "MLP / experts", "norms", "head and loss", "other"};
  for (const std::string& name : named) EXPECT_NE(std::find(parts.begin(), parts.end(), name), parts.end()) << name << "\n" << section;
  for (const char* part : {"attention", "MLP / experts", "norms"})
    EXPECT_NE(std::find(named.begin(), named.end(), part), named.end()) << part << "\n" << section;
}

TEST_F(NewcomerCli, MicroBatchesThatDoNotDivideTheBatchNameTheKey) {
  const std::string bind = " --cluster dgx-a100 --gpus 4 --bind batch=512,seq=32 ";
  ASSERT_EQ(run("compile " + model() + bind + "--strategy dp -o " + path("c")), 0) << err_;
  // The plan as written, then edited to micro_batches: 3.
  std::string plan = symtensor::testing::read_text(path("c/plan.yaml"));
  const std::regex micro(R"((\nbatch: \{global: 512, micro_batches: )[0-9]+)");
  ASSERT_TRUE(std::regex_search(plan, micro)) << plan;
  plan = std::regex_replace(plan, micro, "$013");
  std::ofstream(path("edited.yaml")) << plan;
  int line = 1;
  for (std::size_t at = 0; at < plan.find("micro_batches: 3}"); ++at) line += plan[at] == '\n';
  const std::string expected = "symtensor: error: " + path("edited.yaml") + ":" + std::to_string(line) +
                               ": key 'batch.micro_batches': 3 does not divide the global batch 512 (batch.global); "
                               "the micro-batches must split it into whole samples (and each data-parallel rank's share)\n";
  EXPECT_NE(run("compile " + model() + bind + "--plan " + path("edited.yaml") + " -o " + path("d")), 0);
  EXPECT_EQ(err_, expected);
  EXPECT_NE(run("simulate " + model() + bind + "--plan " + path("edited.yaml")), 0);
  EXPECT_EQ(err_, expected);
}

// A plan is simulated at the dims it was made for unless --bind says otherwise, and then a
// notice names the dims priced at other values; another batch is refused in one line.
TEST_F(NewcomerCli, APlanKeepsItsBindingsOrSaysWhichChanged) {
  ASSERT_EQ(run("compile " + model() + " --cluster dgx-a100 --gpus 4 --bind batch=16,seq=32 --strategy dp -o " + path("c")), 0)
      << err_;
  // compile and simulate name the plan by its degrees and batching, as the reports do (#34).
  EXPECT_NE(out_.find("\nplan              dp tp=1 dp=4 pp=1 cp=1 ep=1, 1 micro-batch of 4 samples\n"
                      "mode              train, batch 16, 1 micro-batch, 1f1b\n"),
            std::string::npos)
      << out_;
  const std::string plan = " --cluster dgx-a100 --gpus 4 --plan " + path("c/plan.yaml");
  ASSERT_EQ(run("simulate " + model() + plan), 0) << err_;  // was "dim 'seq' has no value"
  EXPECT_EQ(err_, "");
  EXPECT_EQ(out_.rfind("plan: dp tp=1 dp=4 pp=1 cp=1 ep=1, 1 micro-batch of 4 samples; 4 devices, 1f1b schedule\n", 0), 0u)
      << out_;
  const std::string as_made = out_;
  ASSERT_EQ(run("simulate " + model() + plan + " --bind seq=32,batch=16"), 0) << err_;
  EXPECT_EQ(err_, "");
  EXPECT_EQ(out_, as_made);
  ASSERT_EQ(run("simulate " + model() + plan + " --bind batch=16,seq=64"), 0) << err_;
  EXPECT_EQ(err_, "symtensor: note: --bind batch=16,seq=64 differs from the plan's batch=16,seq=32 (the plan is priced at seq=64)\n");
  EXPECT_NE(out_, as_made);
  EXPECT_NE(run("simulate " + model() + plan + " --bind batch=32,seq=32"), 0);
  int line = 1;
  const std::string text = symtensor::testing::read_text(path("c/plan.yaml"));
  for (std::size_t at = 0; at < text.find("\nbatch: {global: 16"); ++at) line += text[at] == '\n';
  EXPECT_EQ(err_, "symtensor: error: " + path("c/plan.yaml") + ":" + std::to_string(line + 1) +
                      ": key 'batch.global': 16 differs from the model's --bind batch=32: compile the plan again for that "
                      "batch, or bind batch=16\n");
}

// fit names its answers' plans as the reports do ("symtensor (pp=1, 512 micro-batches, ...)"
// said neither TP, DP nor the micro-batch size), and counts one device as one.
TEST_F(NewcomerCli, FitNamesPlansByTheirDegrees) {
  ASSERT_EQ(run("fit " + model() + " --cluster dgx-a100 --gpus 4 --bind batch=16,seq=32 --only devices --strategy dp"), 0)
      << err_;
  EXPECT_NE(out_.find("\ndevices           1 device  [dp tp=1 dp=1 pp=1 cp=1 ep=1, 1 micro-batch of 16 samples: "),
            std::string::npos)
      << out_;
}

TEST_F(NewcomerCli, SweepTakesYourPriceAndMarksTheOthersIllustrative) {
  ASSERT_EQ(run("sweep " + model() + " --clusters dgx-a100,dgx-h100 --gpus 4 --bind batch=16,seq=32 --jobs 1 "
                "--price A100-SXM4-80GB=1.5 -o " + path("s")),
            0)
      << err_;
  const std::string md = symtensor::testing::read_text(path("s/report.md"));
  EXPECT_NE(md.find("| $1.50/GPU-hour (yours) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| $4.00/GPU-hour (illustrative) |"), std::string::npos) << md;
  EXPECT_NE(run("sweep " + model() + " --clusters dgx-a100 --gpus 4 --price dgx-b200=5 -o " + path("t")), 0);
  EXPECT_EQ(err_, "symtensor: error: --price dgx-b200=5: 'dgx-b200' is none of the swept clusters or their GPUs: "
                  "dgx-a100 (A100-SXM4-80GB)\n");
}

TEST_F(NewcomerCli, ProfileNamesInAnyCaseAndDidYouMean) {
  ASSERT_EQ(run("compile " + model() + " --cluster DGX-A100 --gpus 4 --bind batch=16,seq=32 -o " + path("c")), 0) << err_;
  EXPECT_NE(out_.find("dgx-a100 (4 devices)"), std::string::npos) << out_;
  // The plan was made for DGX-A100: dgx-a100 in another case or as NAMExN is the same profile,
  // no notice; another profile gets one line naming both.
  const std::string plan = " --gpus 4 --bind batch=16,seq=32 --plan " + path("c/plan.yaml");
  ASSERT_EQ(run("simulate " + model() + " --cluster dgx-a100" + plan), 0) << err_;
  EXPECT_EQ(err_, "");
  ASSERT_EQ(run("simulate " + model() + " --cluster Dgx-A100x1 --stack MEGATRON" + plan), 0) << err_;
  EXPECT_EQ(err_, "");  // the plan's stack, megatron, in another case: no notice either
  ASSERT_EQ(run("simulate " + model() + " --cluster dgx-h100" + plan), 0) << err_;
  EXPECT_EQ(err_, "symtensor: note: --cluster dgx-h100 differs from the plan's DGX-A100 (the plan is priced on dgx-h100)\n");
  EXPECT_NE(run("compile " + model() + " --cluster dgx-a10 --gpus 4 --bind batch=16,seq=32 -o " + path("d")), 0);
  std::string bundled;
  for (const std::string& name : hardware::list_profiles()) bundled += (bundled.empty() ? "" : ", ") + name;
  EXPECT_EQ(err_, "symtensor: error: unknown hardware profile 'dgx-a10': did you mean 'dgx-a100'? (bundled: " + bundled +
                      "; or give a path to a .yaml file, or NAMExNODES)\n");
}

}  // namespace
}  // namespace symtensor::compiler
