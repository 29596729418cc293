#pragma once
// torchtitan's llama3 flavors against the model's architecture (emit_torchtitan_flavor.cc).
#include <string>
#include <vector>

#include "compiler/export/model_architecture.h"

namespace symtensor::compiler {

inline constexpr const char* kTitanCustomFlavor = "symtensor";
// What torchtitan's llama3 (RMSNorm, RoPE, SwiGLU, untied, bias-free, dense) cannot build.
std::vector<std::string> titan_llama3_differences(const ModelArchitecture& m);
// "8B", "70B", "405B" when the model is that flavor field by field, else kTitanCustomFlavor.
std::string titan_flavor_name(const ModelArchitecture& m);

}  // namespace symtensor::compiler
