// `symtensor verify MODEL.onnx DIR`: runs the original model and DIR/emulation.onnx in ONNX
// Runtime (scripts/ort/run.js) on the same inputs and reports the max absolute and relative
// error per output; fails beyond tolerance.
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "compiler/driver/commands.h"
#include "compiler/onnx_import/proto_reading.h"

namespace symtensor::driver {
namespace {

struct VerifyOptions {
  std::string model, dir, inputs = "random", bind, rtol = "1e-4", atol = "1e-5", seed = "1";
};

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string emulation_bindings(const std::string& path) {
  const onnx::ModelProto m = compiler::read_model_file(path);
  for (const auto& p : m.metadata_props())
    if (p.key() == "symtensor.bindings") return p.value();
  return "";
}

void run_verify(const VerifyOptions& o) {
  namespace fs = std::filesystem;
  const fs::path emulation = fs::path(o.dir) / "emulation.onnx";
  if (!fs::exists(emulation)) throw std::runtime_error("verify: " + emulation.string() + " does not exist (write it with `symtensor shard` or `compile`)");
  const fs::path runner = fs::path(SYMTENSOR_SOURCE_DIR) / "scripts" / "ort" / "run.js";
  if (!fs::exists(runner)) throw std::runtime_error("verify: the ONNX Runtime runner " + runner.string() + " is missing");
  if (std::system("command -v node >/dev/null 2>&1") != 0)
    throw std::runtime_error("verify: 'node' (Node.js) is not on PATH; install it, then run scripts/install_deps.sh");
  if (!fs::exists(runner.parent_path() / "node_modules" / "onnxruntime-node"))
    throw std::runtime_error("verify: onnxruntime-node is not installed; run scripts/install_deps.sh");
  const std::string baked = emulation_bindings(emulation.string());
  if (!o.bind.empty() && !baked.empty() && o.bind != baked)
    throw std::runtime_error("verify: --bind " + o.bind + " differs from the dims " + emulation.string() +
                             " was written for (" + baked + ")");
  const std::string bind = o.bind.empty() ? baked : o.bind;
  std::string cmd = "node " + quoted(runner.string()) + " compare " + quoted(o.model) + " " + quoted(emulation.string()) +
                    " --seed " + quoted(o.seed) + " --rtol " + quoted(o.rtol) + " --atol " + quoted(o.atol);
  if (!bind.empty()) cmd += " --bind " + quoted(bind);
  if (o.inputs != "random") cmd += " --inputs " + quoted(o.inputs);
  cmd += " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) throw std::runtime_error("verify: cannot start node");
  std::cout << "verify " << o.model << " against " << emulation.string() << " (rtol " << o.rtol << ", atol " << o.atol << ")\n";
  char buffer[4096];
  std::string last;
  while (fgets(buffer, sizeof buffer, pipe)) {
    std::cout << "  " << buffer;
    last = buffer;
  }
  const int status = pclose(pipe);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  if (code == 1) throw std::runtime_error("verify: outputs differ beyond tolerance (rtol " + o.rtol + ")");
  if (code != 0) throw std::runtime_error("verify: the ONNX Runtime runner failed: " + last.substr(0, last.find('\n')));
  std::cout << "verify: OK\n";
}

}  // namespace

void add_verify_command(CLI::App& app) {
  auto o = std::make_shared<VerifyOptions>();
  CLI::App* cmd = app.add_subcommand("verify", "Compare a model with the emulation of its sharded form in ONNX Runtime");
  cmd->add_option("model", o->model, "original ONNX model")->required()->check(CLI::ExistingFile);
  cmd->add_option("dir", o->dir, "directory holding emulation.onnx")->required();
  cmd->add_option("--inputs", o->inputs, "random (seeded) or a JSON file {name: {dtype, shape, data}}");
  cmd->add_option("--bind", o->bind, "dim values; default: those the files were written for");
  cmd->add_option("--rtol", o->rtol, "relative tolerance");
  cmd->add_option("--atol", o->atol, "absolute tolerance");
  cmd->add_option("--seed", o->seed, "seed of the random inputs");
  cmd->callback([o] { run_verify(*o); });
}

}  // namespace symtensor::driver
