#pragma once
// Launch commands that reproduce a serving layout in an engine (issue #33): `vllm serve`,
// `python -m sglang.launch_server` and `trtllm-serve` (plus its extra_llm_api_options YAML).
// Flag names, types and choices: shared/reference/FRAMEWORKS.md, "Serving engines". The ONNX
// file does not say which Hugging Face checkpoint it is, so the model is a PLACEHOLDER the
// script refuses to run without ($MODEL), never a guess.
#include <optional>
#include <string>

#include "compiler/serve/serving_cost.h"

namespace symtensor::compiler {

enum class ServeExportTarget { vllm, sglang, trtllm };

// "vllm", "sglang", "trtllm"; nullopt for anything else.
std::optional<ServeExportTarget> parse_serve_export_target(const std::string& name);
const char* serve_export_target_name(ServeExportTarget t);

struct ServeExport {
  std::string script;        // a bash script: header comments, MODEL placeholder, the launch command
  std::string options_yaml;  // TensorRT-LLM's extra_llm_api_options (empty for the others)
};

// The launch of `cost`'s layout, engine limits and precision in `target`. `options_path` is where
// the YAML will be written (the script names it beside itself, by its file name). Throws one line for what the engine cannot
// express (a layout, a precision, a memory fraction of the other kind) or an engine other than
// the target's (the limits and memory fraction would be another engine's).
ServeExport export_serving(const ServingCost& cost, ServeExportTarget target, const std::string& options_path = "");

// The YAML's path for a script written to `script_path`: SCRIPT.llm_api_options.yaml.
std::string serve_options_path(const std::string& script_path);

}  // namespace symtensor::compiler
