#pragma once
// The expert-parallel token exchange as the flex dispatcher's kernels run it (DeepEP, HybridEP):
// a token goes once to each other node that holds one or more of its experts, over the
// network, and fans out to those experts over NVLink there; its expert outputs come back the
// same way, summed per node first. Megatron's all-to-all sends one copy per expert instead.
namespace symtensor::compiler {

// Of the bytes the all-to-all sends to other nodes, the share the deduplicating dispatcher
// sends, for a token routed to `top_k` of `experts` experts, uniformly, spread evenly over
// `nodes` nodes: the expected number of other nodes it reaches, (n-1)(1 - C(E - E/n, k) / C(E, k)),
// over the expected number of its experts on other nodes, k(n-1)/n. 1 within one node.
double deduplicated_share(int experts, int top_k, int nodes);

}  // namespace symtensor::compiler
