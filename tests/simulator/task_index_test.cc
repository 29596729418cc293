#include <gtest/gtest.h>

#include "simulator/engine/compiled_program.h"
#include "simulator/program/task_factory.h"
#include "simulator/program/task_index.h"
#include "simulator/program/validate.h"
#include "sim_test_util.h"

namespace symtensor::sim {
namespace {

using hardware::Precision;
using testing::make_class;
using testing::test_cluster;

Program chain_program() {
  Program p;
  p.mesh = {{"tp", 1, 0, 1}};
  // "far" depends on a task further back than the recent ones compared first.
  p.rank_classes.push_back(make_class("solo", {0},
                                      {compute_task("a", 1e9, 0, Precision::bf16), compute_task("b", 1e9, 0, Precision::bf16, {"a"}),
                                       compute_task("c", 1e9, 0, Precision::bf16), compute_task("d", 1e9, 0, Precision::bf16),
                                       compute_task("e", 1e9, 0, Precision::bf16), compute_task("f", 1e9, 0, Precision::bf16),
                                       compute_task("far", 1e9, 0, Precision::bf16, {"a", "f", "b"})}));
  return p;
}

TEST(TaskIndex, ResolvesNearAndFarDependenciesInProgramOrder) {
  const Program p = chain_program();
  const ProgramIndex index = index_program(p);
  EXPECT_EQ(index.deps.at(0), (std::vector<int>{0, 0, 5, 1}));
  EXPECT_EQ(validate_program_indexed(p).deps, index.deps);
  EXPECT_EQ(find_dependency(p.rank_classes[0], index.tasks[0], 6, "nope"), -1);
}

TEST(TaskIndex, CompiledDependentsKeepProgramOrder) {
  const CompiledProgram c = compile_program(chain_program(), test_cluster());
  const CompiledClass& cc = c.classes.at(0);
  const auto of_a = cc.dependents(0);
  EXPECT_EQ(std::vector<int>(of_a.begin(), of_a.end()), (std::vector<int>{1, 6}));
  EXPECT_EQ(cc.dep_count.at(6), 3);
  EXPECT_TRUE(cc.dependents(6).empty());
}

TEST(TaskIndex, UnknownDependencyIsNamed) {
  Program p = chain_program();
  p.rank_classes[0].tasks.back().deps.push_back("ghost");
  EXPECT_THROW(index_program(p), std::out_of_range);
  try {
    validate_program(p);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown dependency 'ghost'"), std::string::npos);
  }
}

}  // namespace
}  // namespace symtensor::sim
