#pragma once
// `symtensor sweep --serve MODEL --clusters A,B --rate R --slo-ttft X --slo-tpot Y -o DIR`
// (issue #33): the serving search on each cluster and the cost per million output tokens
// (compiler/report/serve_sweep.h). The flags beside sweep's own, and the run.
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "compiler/driver/command_setup.h"

namespace symtensor::driver {

struct SweepServeFlags {
  bool serve = false;
  std::optional<double> rate;
  double slo_ttft = 0, slo_tpot = 0;
  long long input_len = 1000, output_len = 200;
  std::string precision = "bf16", kv_precision;
  std::optional<int> nodes;
  int requests = 200;
  unsigned long long seed = 1;
};

// --serve and the serving flags, on sweep's command.
void add_sweep_serve_options(CLI::App* cmd, SweepServeFlags& flags);

struct SweepServeRun {
  ModelChoice model;
  std::vector<std::string> clusters;
  std::vector<int> gpus;                 // sweep's --gpus when given, else empty (each profile as it is)
  std::vector<std::string> prices;       // --price texts
  std::string engine;                    // --stack when given, else trtllm
  std::string out;
};

void run_sweep_serve(const SweepServeFlags& flags, const SweepServeRun& run);

}  // namespace symtensor::driver
