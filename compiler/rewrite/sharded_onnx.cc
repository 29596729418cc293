#include "compiler/rewrite/sharded_onnx.h"

#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/rewrite/emulation_writer.h"
#include "compiler/rewrite/onnx_emit.h"
#include "compiler/rewrite/stage_writer.h"
#include "simulator/stats/atomic_write.h"

namespace symtensor::compiler {

void write_sharded_onnx(const onnx::ModelProto& original, Graph& graph, const Plan& plan,
                        const hardware::Cluster& cluster, const std::string& dir) {
  write_sharded_onnx(original, graph, plan, cluster, dir, Mutation::none);
}

ShardedOnnxSummary write_sharded_onnx(const onnx::ModelProto& original, Graph& graph, const Plan& plan,
                                      const hardware::Cluster& cluster, const std::string& dir, Mutation mutation,
                                      const KeptOutputs& kept) {
  const ShardedProgram program = build_sharded_program(original, graph, plan, cluster, mutation, kept);
  std::vector<StageFile> stages = build_stage_files(original, program);
  onnx::ModelProto emulation = build_emulation_model(original, program);
  for (const auto& f : stages) check_model_strict(f.model, f.file);
  check_model_strict(emulation, "emulation.onnx");

  ShardedOnnxSummary summary;
  summary.stages = program.stages;
  nlohmann::json manifest;
  manifest["model"] = graph.source;
  manifest["stages"] = program.stages;
  for (const auto& a : program.mesh.axes()) manifest["mesh"].push_back({{"name", a.name}, {"size", a.size}});
  manifest["pipeline_axis"] = program.pipeline_axis < 0 ? "" : program.mesh.axes()[program.pipeline_axis].name;
  for (const auto& [k, v] : program.bindings) manifest["bindings"][k] = static_cast<long>(v);
  for (const auto& [output, input] : kept) manifest["kept_outputs"][output] = input;
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto& f : stages) {
    files.emplace_back(f.file, f.model.SerializeAsString());
    for (int r : f.ranks) manifest["ranks"][std::to_string(r)] = {{"file", f.file}, {"stage", f.stage}};
  }
  files.emplace_back("emulation.onnx", emulation.SerializeAsString());
  manifest["emulation"] = "emulation.onnx";
  files.emplace_back("manifest.json", manifest.dump(2) + "\n");
  sim::write_files_atomically(dir, files);
  for (const auto& f : files) summary.files.push_back(f.first);
  for (const auto& s : program.steps) summary.collectives += s.kind == ProgramStep::Kind::collective;
  for (const auto& [output, input] : kept)
    for (const auto& v : program.values)
      if (v.origin == ValueOrigin::graph_input && v.name == input) summary.kept.push_back({output, input, v.global_shape, v.local_shape});
  return summary;
}

}  // namespace symtensor::compiler
