#pragma once
// Operator semantics: for each supported ONNX operator, a symbolic shape function and an
// iteration space (loop dims, parallel or reduction, the loop dim of every input/output
// dim, FLOPs and bytes). Everything downstream (sharding, costs, backward) derives from
// the iteration space; there are no per-model rules.
//
// Conventions:
// - FLOPs: a multiply-add counts 2 (MatMul [m,k]x[k,n] = 2mkn). Element-wise ops count
//   one FLOP per output element per arithmetic operation they stand for (Add 1, Gelu 8 ...,
//   documented per family); data movement ops (Reshape, Transpose, Gather, Concat...) 0.
//   Each family file (compiler/ops/*_ops.cc) states its per-op counts in its header comment.
// - bytes: bytes read from all inputs plus bytes written to all outputs (HBM traffic of
//   an unfused kernel). Lookups (Gather*) read only the gathered elements; Shape, Size and
//   Constant count only what they write.
// - Sliding windows (Conv, pools, Resize): input spatial dims map to the output spatial
//   loops; cutting them needs a halo exchange, which the sharding rules must price.
// - A dim of an operand that maps to no loop (broadcast size-1 dim, a dim consumed by
//   an index lookup) has loop index -1.
// - Reshape: loops are the output dims; an input dim equal to a product of output dims
//   maps to the outermost loop of that group (cutting the outer factor keeps contiguity).
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/graph.h"

namespace symtensor::compiler {

// attention: a fused attention kernel (FlashAttention-style: no score tensor in memory,
// backward recomputes the scores); see compiler/ops/attention_ops.cc.
enum class OpKind { gemm, convolution, elementwise, normalization, softmax, reduction, data_movement, routing, attention, opaque };
std::string_view to_string(OpKind k);

// Whether cutting a reduction loop of an operator of this kind leaves partial sums that a
// reduction completes: not under a softmax, a normalization's statistics or a fused
// attention's online softmax.
inline bool reduction_cut_is_partial_sum(OpKind kind) {
  return kind != OpKind::softmax && kind != OpKind::normalization && kind != OpKind::attention;
}

// Shape and Size (ai.onnx): they read their input's dims, never its data, so no layout of
// the input is asked for (their iteration space has no operand for it).
inline bool reads_dims_only(const Node& node) {
  return node.domain.empty() && (node.op_type == "Shape" || node.op_type == "Size");
}

struct IterationSpace;
// The same for one loop of a space: also not when an output indexes the reduction loop, a
// scan (CumSum) or a selection (TopK), whose cut pieces do not add up to the result.
bool reduction_cut_is_partial_sum(const IterationSpace& space, int loop);

struct LoopDim {
  std::string name;   // "b", "m", "n", "k", "c_in" ... (for printing and rules)
  GiNaC::ex extent;
  bool reduction = false;
};

struct IterationSpace {
  OpKind kind = OpKind::opaque;
  std::vector<LoopDim> loops;
  // [input][dim] -> loop index or -1; inputs past its end are not read (Shape, Size).
  std::vector<std::vector<int>> input_dims;
  std::vector<std::vector<int>> output_dims;  // [output][dim] -> loop index or -1
  GiNaC::ex flops = 0;
  GiNaC::ex bytes = 0;
};

// What a shape function returns for each output of a node.
struct OutputInfo {
  ElementType dtype = ElementType::undefined;
  Shape shape;
  std::optional<std::vector<GiNaC::ex>> value;  // compile-time value (small integer tensors)
};

// Everything an op rule may look at. `inputs[i]` is nullptr for an omitted optional input.
struct OpContext {
  const Node& node;
  std::vector<const Tensor*> inputs;
  std::vector<const Tensor*> outputs;  // shapes filled once inference ran
  SymbolTable& symbols;
};

struct OpRule {
  // Output dtypes/shapes/values from the inputs; throws std::runtime_error with a message
  // naming the problem (the caller adds the node name). Empty: keep ONNX's inferred shapes.
  std::function<std::vector<OutputInfo>(const OpContext&)> infer;
  std::function<IterationSpace(const OpContext&)> iteration_space;
};

// Rules by (domain, op_type); "" and "ai.onnx" are the same domain. Each op family
// registers its rules in its own file (register_<family>_ops, see op_families.h).
class OpRegistry {
 public:
  void add(std::string_view domain, std::string_view op_type, OpRule rule);  // throws on a duplicate
  const OpRule* find(std::string_view domain, std::string_view op_type) const;
  std::vector<std::string> op_types() const;  // "Op" for ai.onnx, "domain:Op" otherwise

 private:
  std::map<std::pair<std::string, std::string>, OpRule> rules_;
};

// The registry holding every built-in rule (built once, on first use).
const OpRegistry& builtin_op_registry();

// Shardy-like text form of an iteration space, for tests and logs:
//   "([m,k],[k,n])->([m,n]) {m=128, n=256, k=64 (reduction)} flops=... bytes=..."
// A dim mapped to no loop prints as "_".
std::string to_string(const IterationSpace& space);

// The rule for (domain, op_type) at the node's opset, or nullptr (opaque operator).
const OpRule* find_op_rule(std::string_view domain, std::string_view op_type);
// Iteration space of an opaque node: one parallel loop per output element dim is not
// known, so it has no loops; FLOPs 0 and bytes = sum of input and output bytes.
IterationSpace opaque_iteration_space(const OpContext& ctx);
// The op types that have rules, for listing.
std::vector<std::string> supported_op_types();

}  // namespace symtensor::compiler
