#pragma once
// `symtensor sweep`: the best plan per cluster type and size by the analytic estimate
// (the simulator is the referee in `compare`; a sweep prices hundreds of plans), with
// throughput, the time to train a number of tokens and its cost at the profile's price.
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/fusion/fusion_pass.h"
#include "compiler/report/results.h"
#include "compiler/strategies/strategy.h"

namespace symtensor::compiler {

struct SweepOptions {
  std::string model;
  FusionOptions fusion;    // the fusion pass on import (--attention)
  std::string bind;
  std::string batch_dim, sequence_dim;  // --batch-dim, --seq-dim (empty: found, `seq`)
  std::vector<std::string> clusters;  // profile names (or paths)
  hardware::Software software;        // --stack, --memory-headroom: the same on every cluster
  std::vector<int> gpus{8, 16, 32, 64, 128, 256};
  // The SymTensor search alone by default: it prices Megatron-LM's and data-parallel
  // layouts as its seeds. Baselines are `compare`'s job; add them here to see them win.
  std::vector<std::string> strategies{"symtensor"};
  // The strategies' options: StrategyOptions::bound (or target_seed) of `sweep --stack T`
  // (--unbounded), the same on every point.
  StrategyOptions strategy;
  double tokens = 1e12;
  // `--price CLUSTER=USD/h`: one's own price per GPU-hour, by the name in `clusters`; the
  // others keep their profile's illustrative price.
  std::map<std::string, double> prices;
  int shard_index = 1, shard_count = 1;  // `--shard K/N`: every N-th point, from the K-th (1-based)
  int jobs = 1;  // worker processes (compiler/report/process_pool.h); results do not depend on it
  std::function<void(const std::string&)> progress;
};

// "8,16,64" or "8..1024" (powers of two, both ends included). Throws on bad text.
std::vector<int> parse_gpu_counts(const std::string& text);

// The cluster `name` resized to `gpus` devices: part of one node, or whole nodes, run by
// `software`. Throws when `gpus` is not a multiple of the GPUs per node above one node.
hardware::Cluster cluster_of_size(const std::string& name, int gpus, const hardware::Software& software = {});

// "dgx-h100=2.5,A100-SXM4-80GB=1.2" against the clusters: each key is a name in `clusters`
// or a GPU (the profile's device name), case-insensitive; its value USD per GPU-hour.
// Returns the price of each cluster it names. Throws "--price: ..." on bad text or a key
// that names none of them.
std::map<std::string, double> parse_prices(const std::string& text, const std::vector<std::string>& clusters);

// "K/N" with 1 <= K <= N. Throws "--shard: ..." on bad text.
std::pair<int, int> parse_shard(const std::string& text);

SweepResults run_sweep(const SweepOptions& options);

}  // namespace symtensor::compiler
