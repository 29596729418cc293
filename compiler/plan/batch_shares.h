#pragma once
// Batch shares by group speed on a mixed fleet (issue #32, Plan::group_micro_batches): each
// group's data-parallel replicas run their own count of micro-batches per step, all of the
// plan's one micro-batch size, so that a faster group takes a larger share of the global batch.
#include <string>
#include <vector>

#include "compiler/plan/plan.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

// Empty when the plan's group_micro_batches are valid on `cluster` (empty ones always are),
// else why not, one line: not a mixed fleet, a count per group of the fleet, each at least 1,
// the shares adding up to the global batch (sum of devices x count = devices x micro_batches).
std::string batch_shares_problem(const Plan& plan, const hardware::Cluster& cluster);

// The micro-batches a replica of group `group` runs per step (micro_batches without shares).
int group_micro_batch_count(const Plan& plan, int group);

// The plan as group `group`'s replicas run it: micro_batches their count, the global batch
// that of every replica running that many of the same micro-batch size, no shares (what the
// analysis prices for that group: its per-micro-batch work, activations in flight, step).
Plan plan_for_group(const Plan& plan, int group);

// "dgx-h100: 16 samples per replica, dgx-a100: 4" for a plan of `dp` data-parallel replicas
// (a replica of group g takes global_batch x count_g / (micro_batches x dp)); empty without shares.
std::string describe_batch_shares(const Plan& plan, const hardware::Cluster& cluster, int dp);

}  // namespace symtensor::compiler
