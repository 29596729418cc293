#include "compiler/rewrite/sharded_onnx.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "compiler/rewrite/emulation_writer.h"
#include "compiler/rewrite/onnx_emit.h"
#include "compiler/rewrite/stage_writer.h"

namespace symtensor::compiler {

void write_sharded_onnx(const onnx::ModelProto& original, Graph& graph, const Plan& plan,
                        const hardware::Cluster& cluster, const std::string& dir) {
  write_sharded_onnx(original, graph, plan, cluster, dir, Mutation::none);
}

ShardedOnnxSummary write_sharded_onnx(const onnx::ModelProto& original, Graph& graph, const Plan& plan,
                                      const hardware::Cluster& cluster, const std::string& dir, Mutation mutation) {
  const ShardedProgram program = build_sharded_program(original, graph, plan, cluster, mutation);
  std::vector<StageFile> stages = build_stage_files(original, program);
  onnx::ModelProto emulation = build_emulation_model(original, program);
  for (const auto& f : stages) check_model_strict(f.model, f.file);
  check_model_strict(emulation, "emulation.onnx");

  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create the output directory: " + ec.message());
  ShardedOnnxSummary summary;
  summary.stages = program.stages;
  nlohmann::json manifest;
  manifest["model"] = graph.source;
  manifest["stages"] = program.stages;
  for (const auto& a : program.mesh.axes()) manifest["mesh"].push_back({{"name", a.name}, {"size", a.size}});
  manifest["pipeline_axis"] = program.pipeline_axis < 0 ? "" : program.mesh.axes()[program.pipeline_axis].name;
  for (const auto& [k, v] : program.bindings) manifest["bindings"][k] = static_cast<long>(v);
  for (const auto& f : stages) {
    write_model_atomically(f.model, (std::filesystem::path(dir) / f.file).string());
    summary.files.push_back(f.file);
    for (int r : f.ranks) manifest["ranks"][std::to_string(r)] = {{"file", f.file}, {"stage", f.stage}};
  }
  write_model_atomically(emulation, (std::filesystem::path(dir) / "emulation.onnx").string());
  summary.files.push_back("emulation.onnx");
  manifest["emulation"] = "emulation.onnx";
  const std::string path = (std::filesystem::path(dir) / "manifest.json").string();
  {
    std::ofstream out(path + ".tmp");
    out << manifest.dump(2) << "\n";
    if (!out) throw std::runtime_error(path + ": cannot write");
  }
  std::filesystem::rename(path + ".tmp", path);
  summary.files.push_back("manifest.json");
  for (const auto& s : program.steps) summary.collectives += s.kind == ProgramStep::Kind::collective;
  return summary;
}

}  // namespace symtensor::compiler
