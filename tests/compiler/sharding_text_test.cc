// TensorSharding's text form: print/parse round trip and one-line parse errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "compiler/sharding/tensor_sharding.h"
#include "hardware/device_mesh.h"
#include "tests/compiler/sharding_test_util.h"

namespace symtensor::compiler {
namespace {

using symtensor::testing::mesh_2x4;  // axes outermost first: node = 0, gpu = 1

std::string parse_error(const std::string& text) {
  try {
    parse_sharding(text, mesh_2x4());
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "no error";
}

TEST(ShardingText, MeshAxesAreNamedAfterLevelsOutermostFirst) {
  const auto mesh = mesh_2x4();
  EXPECT_EQ(mesh.axis_index("node"), 0);
  EXPECT_EQ(mesh.axis_index("gpu"), 1);
}

TEST(ShardingText, RoundTripsCanonicalText) {
  const auto mesh = mesh_2x4();
  for (const std::string text : {"[{node},{},{gpu}] partial{}", "[{node,gpu}] partial{}", "[{gpu,node},{}] partial{}",
                                 "[{},{}] partial{node,gpu}", "[{gpu}] partial{node}", "[] partial{gpu}", "[] partial{}"}) {
    EXPECT_EQ(to_string(parse_sharding(text, mesh), mesh), text);
  }
}

TEST(ShardingText, ParsedValueHasAxisIdsPerDim) {
  const auto s = parse_sharding("[{gpu,node},{}] partial{}", mesh_2x4());
  ASSERT_EQ(s.rank(), 2);
  EXPECT_EQ(s.dim_axes[0], (std::vector<int>{1, 0}));  // gpu-major
  EXPECT_TRUE(s.dim_axes[1].empty());
  EXPECT_TRUE(s.partial_axes.empty());
  EXPECT_EQ(s.dim_of(0), 0);
  EXPECT_FALSE(s.replicates(1));
}

TEST(ShardingText, AcceptsSpacesAndOmittedPartialAndNormalizesPartialOrder) {
  const auto mesh = mesh_2x4();
  EXPECT_EQ(to_string(parse_sharding(" [ {gpu} , { } ] ", mesh), mesh), "[{gpu},{}] partial{}");
  EXPECT_EQ(to_string(parse_sharding("[{}] partial{gpu,node}", mesh), mesh), "[{}] partial{node,gpu}");
}

TEST(ShardingText, ErrorsNameTheOffendingText) {
  EXPECT_THAT(parse_error("[{nod}]"), ::testing::HasSubstr("unknown mesh axis 'nod' at column 3"));
  EXPECT_THAT(parse_error("[{nod}]"), ::testing::HasSubstr("sharding '[{nod}]'"));
  EXPECT_THAT(parse_error("[{gpu},{gpu}]"), ::testing::HasSubstr("mesh axis 'gpu' more than once"));
  EXPECT_THAT(parse_error("[{gpu}] partial{gpu}"), ::testing::HasSubstr("more than once"));
  EXPECT_THAT(parse_error("[{gpu}"), ::testing::HasSubstr("expected ']' at column 7, found the end"));
  EXPECT_THAT(parse_error("[{gpu}] partal{}"), ::testing::HasSubstr("expected 'partial{...}' or the end at column 9"));
  EXPECT_THAT(parse_error("[{gpu}] partial{} x"), ::testing::HasSubstr("unexpected text after the partial clause"));
  EXPECT_THAT(parse_error("[{gpu,}]"), ::testing::HasSubstr("expected a mesh axis name at column 7"));
  EXPECT_THAT(parse_error("{gpu}"), ::testing::HasSubstr("expected '[' at column 1"));
  EXPECT_THAT(parse_error("[{gpu node}]"), ::testing::HasSubstr("expected '}' at column 7, found 'node}]'"));
}

TEST(ShardingText, ValidateRejectsUnknownAxisIds) {
  TensorSharding s = TensorSharding::replicated(1);
  s.dim_axes[0] = {2};
  EXPECT_THROW(s.validate(mesh_2x4()), std::runtime_error);
}

}  // namespace
}  // namespace symtensor::compiler
