#include "simulator/stats/intervals.h"

#include <algorithm>

namespace symtensor::sim {

std::vector<Interval> merge_intervals(std::vector<Interval> v) {
  // A class's compute intervals come in order already (one stream, program order).
  if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& i : v) {
    if (i.second <= i.first) continue;
    if (!out.empty() && i.first <= out.back().second)
      out.back().second = std::max(out.back().second, i.second);
    else
      out.push_back(i);
  }
  return out;
}

double total_length(const std::vector<Interval>& merged) {
  double sum = 0;
  for (const auto& i : merged) sum += i.second - i.first;
  return sum;
}

double uncovered_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double covered = 0;
  size_t j = 0;
  for (const auto& i : a) {
    while (j < b.size() && b[j].second <= i.first) ++j;
    for (size_t k = j; k < b.size() && b[k].first < i.second; ++k)
      covered += std::min(i.second, b[k].second) - std::max(i.first, b[k].first);
  }
  return total_length(a) - covered;
}

}  // namespace symtensor::sim
