// The op registry: one registration call per family, in order, and the lookups.
#include <sstream>
#include <stdexcept>

#include "compiler/ops/op_families.h"
#include "compiler/ops/op_helpers.h"

namespace symtensor::compiler {

namespace {
std::string canonical_domain(std::string_view domain) {
  return domain == "ai.onnx" ? std::string() : std::string(domain);
}
}  // namespace

std::string_view to_string(OpKind k) {
  switch (k) {
    case OpKind::gemm: return "gemm";
    case OpKind::convolution: return "convolution";
    case OpKind::elementwise: return "elementwise";
    case OpKind::normalization: return "normalization";
    case OpKind::softmax: return "softmax";
    case OpKind::reduction: return "reduction";
    case OpKind::data_movement: return "data_movement";
    case OpKind::routing: return "routing";
    case OpKind::attention: return "attention";
    case OpKind::opaque: return "opaque";
  }
  return "unknown";
}

void OpRegistry::add(std::string_view domain, std::string_view op_type, OpRule rule) {
  auto key = std::make_pair(canonical_domain(domain), std::string(op_type));
  if (!rules_.emplace(key, std::move(rule)).second) {
    throw std::runtime_error("op rule registered twice: " + std::string(op_type));
  }
}

const OpRule* OpRegistry::find(std::string_view domain, std::string_view op_type) const {
  auto it = rules_.find(std::make_pair(canonical_domain(domain), std::string(op_type)));
  return it == rules_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::op_types() const {
  std::vector<std::string> names;
  for (const auto& [key, rule] : rules_) {
    names.push_back(key.first.empty() ? key.second : key.first + ":" + key.second);
  }
  return names;
}

const OpRegistry& builtin_op_registry() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_matmul_ops(r);
    register_attention_ops(r);
    register_routing_ops(r);
    register_conv_ops(r);
    register_elementwise_ops(r);
    register_normalization_ops(r);
    register_reduction_ops(r);
    register_shape_ops(r);
    register_shape_source_ops(r);
    register_gather_scatter_ops(r);
    register_pooling_ops(r);
    return r;
  }();
  return registry;
}

const OpRule* find_op_rule(std::string_view domain, std::string_view op_type) {
  return builtin_op_registry().find(domain, op_type);
}

std::vector<std::string> supported_op_types() { return builtin_op_registry().op_types(); }

bool reduction_cut_is_partial_sum(const IterationSpace& space, int loop) {
  if (!reduction_cut_is_partial_sum(space.kind)) return false;
  for (const auto& dims : space.output_dims)
    for (int d : dims)
      if (d == loop) return false;
  return true;
}

IterationSpace opaque_iteration_space(const OpContext& ctx) {
  IterationSpace space;
  space.kind = OpKind::opaque;
  for (const Tensor* t : ctx.inputs) space.input_dims.emplace_back(t ? t->shape.size() : 0, -1);
  for (const Tensor* t : ctx.outputs) space.output_dims.emplace_back(t ? t->shape.size() : 0, -1);
  GiNaC::ex bytes = 0;
  for (const Tensor* t : ctx.inputs) if (t && t->shape_known) bytes += ops::tensor_bytes(*t);
  for (const Tensor* t : ctx.outputs) if (t && t->shape_known) bytes += ops::tensor_bytes(*t);
  space.bytes = bytes;
  return space;
}

std::string to_string(const IterationSpace& space) {
  std::ostringstream os;
  auto operands = [&](const std::vector<std::vector<int>>& dims) {
    os << '(';
    for (std::size_t t = 0; t < dims.size(); ++t) {
      os << (t ? ",[" : "[");
      for (std::size_t d = 0; d < dims[t].size(); ++d) {
        int l = dims[t][d];
        os << (d ? "," : "") << (l >= 0 && l < static_cast<int>(space.loops.size()) ? space.loops[l].name : "_");
      }
      os << ']';
    }
    os << ')';
  };
  operands(space.input_dims);
  os << "->";
  operands(space.output_dims);
  os << " {";
  for (std::size_t l = 0; l < space.loops.size(); ++l) {
    os << (l ? ", " : "") << space.loops[l].name << '=' << space.loops[l].extent
       << (space.loops[l].reduction ? " (reduction)" : "");
  }
  os << "} " << to_string(space.kind) << " flops=" << space.flops << " bytes=" << space.bytes;
  return os.str();
}

}  // namespace symtensor::compiler
