// Number formatting of the reports: an empty bubble is 0, not rounding noise; a bare count
// has no trailing space.
#include <gtest/gtest.h>

#include "compiler/base/units.h"

namespace symtensor::compiler {
namespace {

TEST(FormatSeconds, RoundingNoiseBelowANanosecondIsZero) {
  EXPECT_EQ(format_seconds(2.44e-15), "0 s");  // printed "2.44e-09 us" before
  EXPECT_EQ(format_seconds(0), "0 s");
  EXPECT_EQ(format_seconds(-3e-16), "0 s");
  EXPECT_EQ(format_seconds(2.5e-6), "2.5 us");
  EXPECT_EQ(format_seconds(1.5e-9), "0.0015 us");
  EXPECT_EQ(format_seconds(0.0123), "12.3 ms");
  EXPECT_EQ(format_seconds(4.56), "4.56 s");
  EXPECT_EQ(format_seconds(999), "999 s");
  EXPECT_EQ(format_seconds(1799.6), "1,800 s");  // was "1.8e+03 s"
}

// compile and simulate print a step and a throughput alike (#34).
TEST(DescribeStep, ImpracticalPastTenMinutesAndThroughputInTokens) {
  EXPECT_EQ(describe_step_time(4.56), "4.56 s");
  EXPECT_EQ(describe_step_time(1800), "1,800 s (impractical: 30 min per step, 10,000 steps in 208.3 days)");
  EXPECT_EQ(describe_throughput(5.55e6, 32), "178 Mtokens/s (5.55 Msamples/s)");
  EXPECT_EQ(describe_throughput(0.004, 0), "0.004 samples/s");
  EXPECT_EQ(format_throughput(5.55e6, 32), "178 Mtokens/s");
}

// A count without a unit ends with its digits: report.md's samples/s column read "| 2.978  |".
TEST(FormatSi, ACountWithoutUnitHasNoTrailingSpace) {
  EXPECT_EQ(format_si(2.978, ""), "2.978");
  EXPECT_EQ(format_si(12200, ""), "12.2 K");
  EXPECT_EQ(format_si(2.978, "samples/s"), "2.978 samples/s");
  EXPECT_EQ(format_si(1.5e6, "tokens/s"), "1.5 Mtokens/s");
}

}  // namespace
}  // namespace symtensor::compiler
