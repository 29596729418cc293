#pragma once
// serve --onnx -o DIR (issue #33): a decode step with its KV cache written per rank under a
// fixed serving layout, for `symtensor verify MODEL DIR`.
#include <string>

#include "compiler/driver/command_setup.h"
#include "compiler/serve/serving_cost.h"
#include "hardware/cluster.h"

namespace symtensor::driver {

struct ServeOnnxRequest {
  ModelChoice input;             // --bind empty: the defaults below
  hardware::Cluster cluster;     // as loaded; cut down to the layout's GPUs
  compiler::ServingLayout layout;
  std::string precision;         // --precision, the plan's
  long long cache_tokens = 0;    // --input-len: the past length bound when --bind is not given
  std::string dir;
};

// The layout's plan is Megatron's, in inference mode: tp cuts the attention heads (and so the
// KV cache's heads dim: each rank holds n_kv/tp heads) and the MLP column/row-wise, with
// all-reduces; replicas are data parallelism over the batch; pp stages. Each present output
// keeps its past input's sharding (compiler/rewrite/kv_cache.h); the cache length stays whole.
// Without --bind: each KV-cache input's concatenated dim is bound to cache_tokens, the first
// dim of every input to the replicas (one request each), any other dim to 1 (one new token).
// Throws one line, before writing anything, for a model with no KV-cache inputs.
void write_serve_onnx(const ServeOnnxRequest& request);

}  // namespace symtensor::driver
