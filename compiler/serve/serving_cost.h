#pragma once
// The serving cost model of one replica (issue #33): KV-cache memory and the batch it allows,
// and the time of a step of continuous batching (prefill chunks and decodes together) from the
// GPU profile's rates, the serving engine's factors and the collective model. Formulas:
// shared/reference/CALIBRATION.md "LLM serving"; symbols there (L, h, n_kv, d_h, P, b).
#include <algorithm>
#include <cstdint>

#include "compiler/serve/serving_model.h"
#include "hardware/cluster.h"
#include "hardware/precision.h"
#include "hardware/serving_engine.h"
#include "simulator/serving/serving.h"

namespace symtensor::compiler {

struct ServingLayout {
  int tp = 1, pp = 1, ep = 1, replicas = 1;
  int gpus_per_replica() const { return tp * pp; }
  int gpus() const { return gpus_per_replica() * replicas; }
};

struct ServingPrecision {
  hardware::Precision weights = hardware::Precision::bf16;  // and the GEMMs' peak
  hardware::Precision kv = hardware::Precision::bf16;
};

// Bytes per element (NVFP4: 4 bits and one 8-bit scale per 16 values).
double serving_bytes(hardware::Precision p);

// KV-cache bytes per token of the whole model: 2 * L * n_kv * d_h * b (an MLA latent: L * latent * b).
double kv_bytes_per_token(const ServingModel& m, double kv_bytes);
// Of one GPU: the KV heads cut over TP (ceil(n_kv / TP) heads, each GPU a whole one when
// n_kv < TP; an MLA latent is not cut), the layers over PP.
double kv_bytes_per_token_per_gpu(const ServingModel& m, double kv_bytes, int tp, int pp);

struct ServingMemory {
  double capacity = 0;            // device memory
  double weights = 0;             // P * b_w / (TP * PP)
  double activations = 0;         // the step's largest intermediate buffers at the token budget
  double other = 0;               // the engine's: context, NCCL, workspaces
  double kv_cache = 0;            // what the engine gives the KV cache
  double kv_bytes_per_token = 0;  // per GPU
  std::int64_t kv_blocks = 0;     // pages of the engine's block size
  std::int64_t kv_tokens = 0;     // kv_blocks * block size
  // Requests of `tokens` (prompt + output) the cache holds at once, whole pages each.
  std::int64_t batch_for(std::int64_t tokens, int block_size) const;
};

// The serving cost model of one replica.
class ServingCost {
 public:
  // Throws a one-line error for a layout the model or cluster cannot take (TP not dividing the
  // heads, more GPUs than the cluster, weights that do not fit).
  ServingCost(ServingModel model, ServingLayout layout, ServingPrecision precision, hardware::Cluster cluster,
              hardware::ServingEngine engine);

  const ServingModel& model() const { return model_; }
  const ServingLayout& layout() const { return layout_; }
  const ServingPrecision& precision() const { return precision_; }
  const hardware::ServingEngine& engine() const { return engine_; }
  const hardware::Cluster& cluster() const { return cluster_; }
  const ServingMemory& memory() const { return memory_; }

  // Model FLOPs of a prefill of `tokens` prompt tokens whose causal attention spans
  // `attention_pairs` query-key pairs: 2 * P_gemm * tokens + 4 * L * n_q * d_h * pairs
  // (a whole prompt of s tokens: pairs = s (s + 1) / 2, about 2 P s + 2 L h s^2).
  double prefill_flops(double tokens, double attention_pairs) const;
  // Seconds of one step of the replica (sim::ServingStepTime).
  double step_seconds(const sim::ServingBatch& batch) const;
  // The scheduler of one replica: the engine's limits and the KV pages memory() allows.
  sim::ServingScheduler scheduler() const;

  // The parts of a step, for reports and tests.
  struct StepParts {
    double weights_s = 0, kv_s = 0, gemm_compute_s = 0, attention_compute_s = 0, tp_comm_s = 0, pp_comm_s = 0,
           overhead_s = 0, total_s = 0;
  };
  StepParts step_parts(const sim::ServingBatch& batch) const;

 private:
  double all_reduce_seconds(double bytes) const;
  // Bytes of an embedding or output-head weight: 16 bits under FP8/FP4 weights, else the weights'.
  double vocabulary_bytes() const { return std::max(2.0, serving_bytes(precision_.weights)); }

  ServingModel model_;
  ServingLayout layout_;
  ServingPrecision precision_;
  hardware::Cluster cluster_;
  hardware::ServingEngine engine_;
  ServingMemory memory_;
  double peak_ = 0, hbm_ = 0;
  hardware::EngineKernels kernels_;
};

}  // namespace symtensor::compiler
