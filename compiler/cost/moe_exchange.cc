#include "compiler/cost/moe_exchange.h"

#include <stdexcept>
#include <string>

namespace symtensor::compiler {

double deduplicated_share(int experts, int top_k, int nodes) {
  if (nodes <= 1) return 1;
  if (experts < 1 || top_k < 1 || top_k > experts || experts % nodes != 0)
    throw std::runtime_error("MoE exchange: " + std::to_string(experts) + " experts, top-" + std::to_string(top_k) +
                             ", over " + std::to_string(nodes) + " nodes");
  const double e = experts, elsewhere = e - e / nodes;
  double misses = 1;  // chance that none of the k experts lies on a given other node
  for (int i = 0; i < top_k; ++i) misses *= elsewhere - i > 0 ? (elsewhere - i) / (e - i) : 0.0;
  const double nodes_reached = (nodes - 1) * (1 - misses);
  const double experts_elsewhere = static_cast<double>(top_k) * (nodes - 1) / nodes;
  return nodes_reached / experts_elsewhere;
}

}  // namespace symtensor::compiler
