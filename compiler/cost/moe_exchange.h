#pragma once
// The expert-parallel token exchange as the flex dispatcher's kernels run it (DeepEP, HybridEP):
// a token goes once to each other node that holds one or more of its experts, over the
// network, and fans out to those experts over NVLink there; its expert outputs come back the
// same way, summed per node first. Megatron's all-to-all sends one copy per expert instead.
namespace symtensor::compiler {

// Of the bytes the all-to-all sends to other nodes, the share the deduplicating dispatcher
// sends, for a token routed to `top_k` of `experts` experts spread evenly over `nodes` nodes:
// the expected number of other nodes it reaches over the expected number of its experts on
// other nodes, k(n-1)/n. 1 within one node.
// Routed uniformly, a token reaches another node with chance 1 - C(E - E/n, k) / C(E, k).
// Under group-limited routing (DeepSeek-V3's n_group / topk_group: the k experts come from the
// `top_groups` best of `groups` equal groups), when the nodes hold whole groups (n divides the
// groups), a node is reached only if one of its groups is picked: with chance
// sum_j C(g, j) C(G - g, t - j) / C(G, t) * (1 - C(T - j E/G, k) / C(T, k)), for g = G/n groups
// per node and T = t E/G experts open to the token. Otherwise as if routed uniformly.
double deduplicated_share(int experts, int top_k, int nodes, int groups = 1, int top_groups = 1);

}  // namespace symtensor::compiler
