// The searches' walks up a knob (UpwardWalk, compiler/search/search_common.h): they stop after
// `patience` values in a row no better than the best before, only once something fits; with a
// bar (a step a seed already reached) values no better than the bar count as no better.
#include <limits>

#include <gtest/gtest.h>

#include "compiler/search/search_common.h"

namespace symtensor::compiler {
namespace {

constexpr double kNothingFits = std::numeric_limits<double>::infinity();

TEST(UpwardWalk, StopsAfterItsPatienceOnceSomethingFits) {
  UpwardWalk walk(2);
  EXPECT_FALSE(walk.stop(kNothingFits));  // nothing fits yet: go on
  EXPECT_FALSE(walk.stop(kNothingFits));
  EXPECT_FALSE(walk.stop(10));
  EXPECT_FALSE(walk.stop(8));
  EXPECT_FALSE(walk.stop(9));  // one worse
  EXPECT_FALSE(walk.stop(7));  // better again: the count starts over
  EXPECT_FALSE(walk.stop(7));  // a tie is no better
  EXPECT_TRUE(walk.stop(kNothingFits));
  EXPECT_TRUE(walk.stopped());
  EXPECT_EQ(walk.best(), 7);
}

TEST(UpwardWalk, ABarCountsAsTheBestBefore) {
  UpwardWalk walk(2, 5);
  EXPECT_FALSE(walk.stop(40));           // worse than the bar, though the first value
  EXPECT_FALSE(walk.stop(kNothingFits));  // nothing fits: not counted against the bar
  EXPECT_TRUE(walk.stop(50));
  EXPECT_EQ(walk.best(), kNothingFits);  // its own best: none beat the bar

  // Depths where nothing fits do not end a walk with a bar: deeper ones may fit.
  UpwardWalk tight(2, 5);
  EXPECT_FALSE(tight.stop(kNothingFits));
  EXPECT_FALSE(tight.stop(kNothingFits));
  EXPECT_FALSE(tight.stop(kNothingFits));
  EXPECT_FALSE(tight.stop(4));
  EXPECT_FALSE(tight.stop(kNothingFits));  // once the walk has fit, it counts
  EXPECT_TRUE(tight.stop(kNothingFits));

  UpwardWalk beaten(2, 5);
  EXPECT_FALSE(beaten.stop(6));
  EXPECT_FALSE(beaten.stop(4));  // under the bar: the walk's best
  EXPECT_FALSE(beaten.stop(4.5));
  EXPECT_TRUE(beaten.stop(4.2));
  EXPECT_EQ(beaten.best(), 4);

  UpwardWalk no_bar(2, kNothingFits);  // as without one
  EXPECT_FALSE(no_bar.stop(kNothingFits));
  EXPECT_FALSE(no_bar.stop(kNothingFits));
  EXPECT_FALSE(no_bar.stop(40));
}

}  // namespace
}  // namespace symtensor::compiler
