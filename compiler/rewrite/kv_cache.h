#pragma once
// A decode step's KV cache, read from the ONNX graph: each graph output that is a Concat of a
// graph input (the past keys or values of one layer) with the new token's, as GPT-2's and
// HF's modeling code write the cache update (torch.cat((past, new), dim=-2)). `serve --onnx`
// keeps each present output in its past input's sharding (KeptOutputs), so under tensor
// parallelism each rank holds its heads of the cache from one step to the next.
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "compiler/ir/graph.h"
#include "compiler/plan/plan.h"
#include "compiler/rewrite/sharded_program.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

struct KvCachePair {
  std::string past;     // graph input
  std::string present;  // graph output: Concat(past, new) along `axis`
  long axis = 0;        // the concatenated (cache length) dim, non-negative when the rank is known
};

// In graph output order; empty when the model has no KV-cache inputs (not a decode step).
// Identity and Cast between the Concat and the output or the input are looked through.
std::vector<KvCachePair> find_kv_cache(const onnx::ModelProto& model);

KeptOutputs kept_outputs_of(const std::vector<KvCachePair>& pairs);

// Cuts each cache update (the Concat producing a present output) the way the new token's keys
// or values arrive, on every dim but the concatenated one: the past input then takes that cut
// too (a graph input takes its first consumer's), so each rank reads and writes only its heads
// of the cache. A plan made for training returns outputs whole, so its searches may concatenate
// whole and slice after (cheaper than gathering the cache once a step, not so when the cache
// is kept). Throws when a present output's Concat is not in `graph`, and, naming the input and
// dim, when the cut does not divide a dim of the cache evenly. Returns, per pair, the pieces
// its cache is cut into (the product of the cut ways over its dims).
std::vector<long> cut_kv_cache_updates(Graph& graph, Plan& plan, const hardware::Cluster& cluster, const std::vector<KvCachePair>& pairs);

}  // namespace symtensor::compiler
