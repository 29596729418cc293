#pragma once
// Interval arithmetic for stream statistics.
#include <utility>
#include <vector>

namespace symtensor::sim {

using Interval = std::pair<double, double>;  // [start, end)

// Sorts and merges overlapping intervals.
std::vector<Interval> merge_intervals(std::vector<Interval> intervals);
double total_length(const std::vector<Interval>& merged);
// Length of `a` not covered by `b`; both merged.
double uncovered_length(const std::vector<Interval>& a, const std::vector<Interval>& b);

}  // namespace symtensor::sim
