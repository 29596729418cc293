#pragma once
// A serving engine (TensorRT-LLM, vLLM, SGLang) as data: how much of a GPU's memory it gives
// the KV cache, how it pages and schedules it, and how close its kernels come to the GPU's
// peaks in prefill and decode. hardware/engines/*.yaml, schema in hardware/engines/README.md,
// each number with its source. Few parameters per engine (and per GPU family), never one per
// published run.
#include <string>
#include <vector>

namespace symtensor::hardware {

// Kernel speed of an engine on the devices whose name starts with one of `gpus` (the entry
// with the longest matching prefix wins; the engine's own fields otherwise).
struct EngineKernels {
  std::vector<std::string> gpus;
  double prefill = 0.5;         // achieved/peak of prefill GEMMs and attention (compute-bound)
  double decode_compute = 0.5;  // achieved/peak of decode GEMMs once they turn compute-bound
  double hbm = 0.8;             // achieved/datasheet HBM bandwidth of decode (MBU)
  std::string source;
};

struct ServingEngine {
  std::string name = "trtllm";
  std::string description;
  std::string source;  // the file it was loaded from
  // Memory: the KV cache gets `memory_fraction` of the device memory (fraction_of_free: of the
  // memory left after weights, activations and `other` instead, as TensorRT-LLM's
  // free_gpu_memory_fraction), less what is not the KV cache.
  double memory_fraction = 0.9;
  bool fraction_of_free = false;
  double other_bytes = 3.5 * (1ull << 30);  // CUDA context, NCCL buffers, workspaces
  // Scheduling.
  int block_size = 16;           // tokens per KV-cache page
  int max_batch = 256;           // requests in a step
  int max_num_tokens = 8192;     // tokens in a step (the budget chunked prefill fills)
  bool chunked_prefill = true;   // a prompt may be split over steps
  // true: a request is admitted only when its whole prompt and output fit in the KV cache
  // (TensorRT-LLM's GUARANTEED_NO_EVICT); false: pages on demand, preempting by recomputation.
  bool reserve_whole_request = false;
  // Overheads: per step (scheduler, sampling, launch of the step) and per layer and step
  // (kernel launches the step's graph does not hide).
  double step_overhead_s = 0;
  double layer_overhead_s = 0;
  EngineKernels kernels;                 // the default
  std::vector<EngineKernels> gpu_kernels;  // per GPU family

  const EngineKernels& kernels_for(const std::string& device_name) const;
};

// A bundled engine's name ("trtllm", any case) or a path to a .yaml file. Throws
// "FILE:LINE:COL: key 'x': problem" on invalid content, a one-line list for an unknown name.
ServingEngine load_serving_engine(const std::string& name_or_path);
ServingEngine parse_serving_engine(const std::string& yaml_text, const std::string& source);
std::vector<std::string> list_serving_engines();
std::string serving_engine_directory();

}  // namespace symtensor::hardware
