#include "compiler/plan/batch_shares.h"

#include <fmt/format.h>

namespace symtensor::compiler {

std::string batch_shares_problem(const Plan& plan, const hardware::Cluster& cluster) {
  const std::vector<int>& counts = plan.group_micro_batches;
  if (counts.empty()) return {};
  if (!cluster.mixed()) return fmt::format("cluster '{}' is not a mixed fleet: batch shares need groups", cluster.name);
  if (counts.size() != cluster.groups.size())
    return fmt::format("{} counts for the {} groups of '{}'", counts.size(), cluster.groups.size(), cluster.name);
  double devices = 0;
  for (std::size_t g = 0; g < counts.size(); ++g) {
    if (counts[g] < 1) return fmt::format("group {} ({}): {} micro-batches, at least 1", g + 1, cluster.groups[g].profile, counts[g]);
    devices += static_cast<double>(cluster.groups[g].devices) * counts[g];
  }
  const double expected = static_cast<double>(cluster.num_devices()) * plan.micro_batches;
  if (devices != expected)
    return fmt::format("the shares do not add up to the global batch: sum of devices x count is {}, devices x "
                       "micro_batches is {}",
                       devices, expected);
  return {};
}

int group_micro_batch_count(const Plan& plan, int group) {
  if (plan.group_micro_batches.empty()) return plan.micro_batches;
  return plan.group_micro_batches.at(group);
}

Plan plan_for_group(const Plan& plan, int group) {
  Plan p = plan;
  const int m = group_micro_batch_count(plan, group);
  p.global_batch = plan.global_batch / plan.micro_batches * m;
  p.micro_batches = m;
  p.group_micro_batches.clear();
  return p;
}

std::string describe_batch_shares(const Plan& plan, const hardware::Cluster& cluster, int dp) {
  std::string s;
  for (std::size_t g = 0; g < plan.group_micro_batches.size() && g < cluster.groups.size(); ++g) {
    const double samples = plan.global_batch * plan.group_micro_batches[g] / (static_cast<double>(plan.micro_batches) * dp);
    s += fmt::format("{}{}: {:g}{}", g ? ", " : "", cluster.groups[g].profile, samples, g ? "" : " samples per replica");
  }
  return s;
}

}  // namespace symtensor::compiler
