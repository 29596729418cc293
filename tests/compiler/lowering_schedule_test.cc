// Pipeline orders of GPipe, 1F1B and Megatron's interleaved 1F1B.
#include <set>
#include <tuple>

#include <gtest/gtest.h>

#include "compiler/lowering/chunk_work.h"
#include "compiler/plan/pipeline_order.h"

namespace symtensor::compiler {
namespace {

using U = PipelineUnit;

void expect_complete(const std::vector<U>& order, int m, int chunks) {
  ASSERT_EQ(order.size(), static_cast<size_t>(2 * m * chunks));
  std::set<std::tuple<bool, int, int>> seen;
  for (size_t i = 0; i < order.size(); ++i) {
    const U& u = order[i];
    EXPECT_TRUE(seen.insert({u.forward, u.micro_batch, u.chunk}).second);
    if (!u.forward) {
      EXPECT_TRUE(seen.count({true, u.micro_batch, u.chunk})) << "backward before forward at " << i;
    }
  }
}

TEST(LoweringSchedule, OneFOneBWarmsUpWithStagesMinusRankForwards) {
  // Stage 1 of 4, 6 micro-batches: warm-up 4-1-1 = 2 forwards, then F2 B0 F3 B1 F4 B2 F5 B3, cool-down B4 B5.
  const auto order = pipeline_order(Schedule::one_f_one_b, 4, 1, 6, 1);
  const std::vector<U> want = {{true, 0, 0},  {true, 1, 0},  {true, 2, 0},  {false, 0, 0}, {true, 3, 0},  {false, 1, 0},
                               {true, 4, 0},  {false, 2, 0}, {true, 5, 0},  {false, 3, 0}, {false, 4, 0}, {false, 5, 0}};
  EXPECT_EQ(order, want);
  expect_complete(pipeline_order(Schedule::one_f_one_b, 4, 3, 6, 1), 6, 1);
  expect_complete(pipeline_order(Schedule::one_f_one_b, 8, 0, 3, 1), 3, 1);  // fewer micro-batches than stages
}

TEST(LoweringSchedule, GPipeRunsAllForwardsFirst) {
  const auto order = pipeline_order(Schedule::gpipe, 4, 2, 5, 1);
  expect_complete(order, 5, 1);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(order[i].forward);
}

TEST(LoweringSchedule, InterleavedFollowsMegatron) {
  // p = 2, v = 2, m = 4, stage 0: warm-up 2*(2-0-1) + (2-1)*2 = 4 forward units
  // k=0..3 -> (mb0,c0) (mb1,c0) (mb0,c1) (mb1,c1); then F k=4 (mb2,c0) with B k=0 (mb0, chunk 1), ...
  const auto order = pipeline_order(Schedule::interleaved_1f1b, 2, 0, 4, 2);
  expect_complete(order, 4, 2);
  const std::vector<U> head = {{true, 0, 0}, {true, 1, 0}, {true, 0, 1}, {true, 1, 1}, {true, 2, 0}, {false, 0, 1}};
  EXPECT_EQ(std::vector<U>(order.begin(), order.begin() + 6), head);
  // The last stage warms up with only (v-1)*p = 2 units.
  const auto last = pipeline_order(Schedule::interleaved_1f1b, 2, 1, 4, 2);
  expect_complete(last, 4, 2);
  EXPECT_TRUE(last[1].forward);
  EXPECT_TRUE(last[2].forward);
  EXPECT_FALSE(last[3].forward);
}

TEST(LoweringSchedule, InterleavedNeedsMicroBatchesMultipleOfStages) {
  EXPECT_THROW(pipeline_order(Schedule::interleaved_1f1b, 4, 0, 6, 2), std::runtime_error);
  EXPECT_THROW(pipeline_order(Schedule::one_f_one_b, 4, 4, 6, 1), std::runtime_error);
}

TEST(LoweringSchedule, LayerOfNodeName) {
  EXPECT_EQ(layer_of("h.3/attn/MatMul"), "h.3");
  EXPECT_EQ(layer_of("model/layers.12/mlp/fc1"), "model/layers.12");
  EXPECT_EQ(layer_of("lm_head"), "");
}

}  // namespace
}  // namespace symtensor::compiler
