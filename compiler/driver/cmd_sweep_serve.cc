// sweep --serve (compiler/driver/sweep_serve.h): the serving search per cluster, its cost per
// million output tokens, the table on stdout and the report files in -o DIR.
#include <iostream>

#include <fmt/format.h>

#include "compiler/driver/sweep_serve.h"
#include "compiler/report/serve_sweep.h"
#include "compiler/report/sweep.h"
#include "compiler/serve/serving_model.h"
#include "hardware/precision.h"
#include "simulator/stats/atomic_write.h"

namespace symtensor::driver {
namespace {

hardware::Precision sweep_precision(const std::string& text, const std::string& flag) {
  const auto p = hardware::parse_precision(text);
  if (!p) throw std::runtime_error(fmt::format("{}: unknown precision '{}' (fp32, bf16, fp16, fp8, fp4)", flag, text));
  return *p;
}

}  // namespace

void add_sweep_serve_options(CLI::App* cmd, SweepServeFlags& f) {
  cmd->add_flag("--serve", f.serve,
                "serving instead of training: per cluster the serving search's layout (aggregated or disaggregated) at "
                "--rate under --slo-ttft/--slo-tpot, and its cost per million output tokens; --stack is then the serving "
                "engine (trtllm, vllm, sglang; default trtllm)");
  cmd->add_option("--rate", f.rate, "--serve: Poisson arrivals, requests/s");
  cmd->add_option("--slo-ttft", f.slo_ttft, "--serve: time to first token limit, seconds");
  cmd->add_option("--slo-tpot", f.slo_tpot, "--serve: time per output token limit, seconds");
  cmd->add_option("--input-len", f.input_len, "--serve: prompt tokens per request")->capture_default_str();
  cmd->add_option("--output-len", f.output_len, "--serve: output tokens per request")->capture_default_str();
  cmd->add_option("--precision", f.precision, "--serve: weights and GEMMs: bf16, fp16, fp8, fp4")->capture_default_str();
  cmd->add_option("--kv-precision", f.kv_precision, "--serve: KV cache (default: fp8 with fp8/fp4 weights, else the weights')");
  cmd->add_option("--nodes", f.nodes, "--serve: nodes of every profile (default: the profile's own; not with --gpus)");
  cmd->add_option("--requests", f.requests, "--serve: requests simulated per replica")->capture_default_str();
  cmd->add_option("--seed", f.seed, "--serve: seed of the Poisson arrivals")->capture_default_str();
}

void run_sweep_serve(const SweepServeFlags& f, const SweepServeRun& run) {
  if (!f.rate || !(*f.rate > 0)) throw std::runtime_error("sweep --serve: give --rate (requests/s, positive)");
  if (f.slo_ttft < 0 || f.slo_tpot < 0) throw std::runtime_error("sweep --serve: --slo-ttft and --slo-tpot must be positive");
  if (f.slo_ttft <= 0 && f.slo_tpot <= 0) throw std::runtime_error("sweep --serve: give --slo-ttft or --slo-tpot");
  if (f.input_len < 1 || f.output_len < 1) throw std::runtime_error("sweep --serve: --input-len and --output-len must be at least 1");
  if (f.requests < 1) throw std::runtime_error("sweep --serve: --requests must be at least 1");
  if (f.nodes && !run.gpus.empty()) throw std::runtime_error("sweep --serve: size the clusters with --nodes or --gpus, not both");
  if (f.nodes && *f.nodes < 1) throw std::runtime_error("sweep --serve: --nodes must be at least 1");
  compiler::ServeSweepOptions o;
  o.clusters = run.clusters;
  for (const auto& name : o.clusters) hardware::load_cluster(name);  // a bad name fails now, not per row
  for (const auto& text : run.prices)
    for (const auto& [cluster, usd] : compiler::parse_prices(text, o.clusters)) o.prices[cluster] = usd;
  sim::check_output_dir(run.out, "-o");
  o.gpus = run.gpus;
  o.nodes = f.nodes;
  o.engine = run.engine;
  o.precision.weights = sweep_precision(f.precision, "--precision");
  o.precision.kv = f.kv_precision.empty()
                       ? (hardware::is_low_precision(o.precision.weights) ? hardware::Precision::fp8 : o.precision.weights)
                       : sweep_precision(f.kv_precision, "--kv-precision");
  o.search.rate = *f.rate;
  o.search.input_tokens = f.input_len;
  o.search.output_tokens = f.output_len;
  o.search.slo = sim::ServingSlo{f.slo_ttft, f.slo_tpot};
  o.search.requests_per_replica = f.requests;
  o.search.seed = f.seed;
  o.progress = [](const std::string& line) { std::cerr << line << "\n"; };

  ModelChoice model = run.model;
  if (model.bind.empty()) model.bind = fmt::format("batch=1,seq={}", f.input_len);
  compiler::Graph graph = import_model(model, false);
  const std::string name = model.path.substr(model.path.find_last_of('/') + 1);
  const compiler::ServeSweepResults r = compiler::run_serve_sweep(compiler::read_serving_model(graph, name), o);
  compiler::write_serve_sweep_report(r, run.out);
  std::cout << compiler::serve_sweep_text(r) << "\nreport: " << run.out
            << "/report.html (and report.md, results.csv, results.json)\n";
}

}  // namespace symtensor::driver
