#pragma once
// The software stack that runs a plan (Megatron-LM, torchtitan, DeepSpeed, JAX): how it keeps
// the model states in memory, how close its kernels come to the profile's curves on each
// GPU, and what it adds to every step. Stacks are data: hardware/stacks/*.yaml, documented
// in hardware/stacks/README.md, each number with its source.
#include <optional>
#include <string>
#include <vector>

#include "hardware/precision.h"

namespace symtensor::hardware {

struct Cluster;

// Bytes per parameter (or per logit) that a stack keeps.
struct StackMemory {
  double weights = 2;          // the compute copy of the weights (bf16)
  double master_weights = 4;   // fp32 master copy beside it (0: the weights are the master copy)
  double gradients = 4;        // the gradient buffer (Megatron's fp32 main gradients)
  double optimizer = 8;        // Adam's two moments
  double gradient_reduce = 4;  // per element of the gradients' all-reduce / reduce-scatter
  double weight_gather = 2;    // per element of the weights' all-gathers (ZeRO-3, after the optimizer)
  // Held per logit while the loss runs on the last stage: the logits and the copy the
  // cross-entropy computes in (bf16 logits + an fp32 copy: 6).
  double loss_per_logit = 6;
  // Low precisions whose compute weights the stack keeps only in that precision (Megatron's
  // --fp8-param-gather / fp4 param gather): no bf16 copy beside the quantized ones, and the
  // parameter all-gathers move the quantized copy.
  std::vector<Precision> low_precision_params;
  bool low_precision_params_for(Precision p) const;
  // Whether a low-precision GEMM's quantized weight copies stay in memory between uses
  // (Transformer Engine caches them across micro-batches) or are made in each forward from
  // the gathered weights and freed with them (torchao's Float8Linear under FSDP2, XLA's
  // fused casts): then no copy is held at rest.
  bool low_precision_copies_kept = true;
};

// Factors on a GPU profile's curves, for the devices whose name starts with one of `gpus`
// (GPUs of the same silicon share them: H100 and H200, GB200 and B200).
struct StackKernels {
  std::vector<std::string> gpus;
  double gemm = 1;       // the GEMM efficiency curve (and every kernel priced on it)
  double attention = 1;  // the fused attention table
  double fp8_gemm = 1;   // low-precision (FP8, MXFP8, NVFP4) linear GEMMs, on the GEMM curve at their peak
  // NVFP4 GEMMs beside fp8_gemm (their Hadamard transforms, stochastic rounding and 16-value
  // scales): 1 runs them as FP8's.
  double fp4_gemm = 1;
  // A mixture's grouped expert GEMMs (all local experts in one kernel, sized on the curve by
  // their total) beside the dense GEMMs: 1 runs them as one dense GEMM of that size.
  double grouped_gemm = 1;
  std::string source;    // where the factors come from (the runs they were fitted on)
};

// What selective recomputation keeps. Megatron-LM's (--recompute-granularity selective)
// drops the attention core's sequence-quadratic tensors and recomputes them; torchtitan's
// op-level policy (activation_checkpoint mode "selective", option "op") keeps the outputs of
// every other matmul of a layer and of the attention kernels and recomputes the rest of the
// layer from its input.
enum class SelectiveRecompute { attention_core, every_other_matmul };

struct Stack {
  std::string name = "megatron";
  std::string description;
  std::string source;  // the file it was loaded from; empty for the built-in defaults
  StackMemory memory;
  std::vector<StackKernels> kernels;
  // Tensor-parallel collectives run under the GEMMs they feed or leave (Megatron's
  // --tp-comm-overlap, torchtitan's async TP) instead of before or after them.
  bool overlap_tp_comm = false;
  // Element-wise chains run as fused kernels (Transformer Engine's fused norms, SwiGLU, RoPE and
  // bias-dropout-add; XLA's fusions): a value that only feeds the next element-wise op of its
  // layer never reaches HBM. False: eager PyTorch, one kernel and one HBM round trip per op.
  bool fused_elementwise = false;
  SelectiveRecompute selective_recompute = SelectiveRecompute::attention_core;

  // The factors for a device (the entry with the longest prefix of its name), if any.
  const StackKernels* kernels_for(const std::string& device_name) const;
};

// A bundled stack's name ("megatron") or a path to a .yaml file. Throws
// "FILE:LINE:COL: key 'x': problem" on invalid content, and a one-line list of the bundled
// stacks for an unknown name.
Stack load_stack(const std::string& name_or_path);
Stack parse_stack(const std::string& yaml_text, const std::string& source);
std::vector<std::string> list_stacks();  // the bundled stacks' names, sorted
std::string stack_directory();

// The cluster as the stack runs it: its device's GEMM curve and attention table scaled by the
// stack's factors for that device (capped at 1), and Cluster::stack set.
Cluster apply_stack(Cluster cluster, const Stack& stack);

// What runs on a cluster: the stack (--stack) and the share of device memory a plan leaves
// free (--memory-headroom: allocator fragmentation and spikes no cost model sees; 5% unless
// stated, beside the profile's memory_reserve_gb).
constexpr double kDefaultMemoryHeadroom = 0.05;
struct Software {
  std::string stack = "megatron";  // a bundled stack's name or a .yaml path
  double memory_headroom = kDefaultMemoryHeadroom;
};
// apply_stack(cluster, load_stack(software.stack)) with the headroom set on its device.
// Throws a one-line error for a headroom outside [0, 0.5].
Cluster with_software(Cluster cluster, const Software& software);

}  // namespace symtensor::hardware
