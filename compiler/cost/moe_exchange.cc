#include "compiler/cost/moe_exchange.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace symtensor::compiler {
namespace {

// C(total - avoided, k) / C(total, k): the chance that k of `total` picked uniformly miss
// `avoided` given ones.
double chance_all_miss(double total, double avoided, int k) {
  double p = 1;
  for (int i = 0; i < k; ++i) p *= total - avoided - i > 0 ? (total - avoided - i) / (total - i) : 0.0;
  return p;
}

double binomial(int n, int r) {
  if (r < 0 || r > n) return 0;
  double c = 1;
  for (int i = 1; i <= r; ++i) c = c * (n - r + i) / i;
  return c;
}

}  // namespace

double deduplicated_share(int experts, int top_k, int nodes, int groups, int top_groups) {
  if (nodes <= 1) return 1;
  if (experts < 1 || top_k < 1 || top_k > experts || experts % nodes != 0)
    throw std::runtime_error("MoE exchange: " + std::to_string(experts) + " experts, top-" + std::to_string(top_k) +
                             ", over " + std::to_string(nodes) + " nodes");
  const double e = experts;
  const bool group_limited = groups > 1 && top_groups >= 1 && top_groups < groups && experts % groups == 0 &&
                             groups % nodes == 0 && top_k <= top_groups * (experts / groups);
  double reach = 0;  // chance that the token reaches a given other node
  if (group_limited) {
    const int per_node = groups / nodes;
    const double group_experts = e / groups, open = top_groups * group_experts;
    for (int j = 1; j <= std::min(per_node, top_groups); ++j)
      reach += binomial(per_node, j) * binomial(groups - per_node, top_groups - j) / binomial(groups, top_groups) *
               (1 - chance_all_miss(open, j * group_experts, top_k));
  } else {
    reach = 1 - chance_all_miss(e, e / nodes, top_k);
  }
  const double nodes_reached = (nodes - 1) * reach;
  const double experts_elsewhere = static_cast<double>(top_k) * (nodes - 1) / nodes;
  return nodes_reached / experts_elsewhere;
}

}  // namespace symtensor::compiler
