// symtensor serve MODEL.onnx --cluster PROFILE [--nodes N] [--gpus G] --tp T [--pp P] [--ep E] [--replicas R]
//   --input-len I --output-len O [--precision bf16|fp8|...] [--kv-precision P] [--stack trtllm|vllm|sglang|FILE]
//   [--offline | --rate R | --concurrency K | --trace FILE] [--requests N] [--seed S]
//   [--slo-ttft S] [--slo-tpot S] [--json]
// Without --tp, with --rate and an SLO: the layout search (compiler/serve/serve_search.h) on each
// cluster of --cluster A,B,...
// Serving a model (issue #33): KV-cache memory and the batch it allows, prefill and decode
// step times (compiler/serve/serving_cost.h), and a discrete-event simulation of requests
// under continuous batching (simulator/serving/serving.h): TTFT, TPOT, ITL, end-to-end
// latency, throughput per GPU and goodput under SLOs.
#include <unistd.h>

#include <iostream>
#include <sstream>
#include <memory>

#include <fmt/format.h>

#include "compiler/driver/command_setup.h"
#include "compiler/driver/commands.h"
#include "compiler/serve/serve_report.h"
#include "compiler/serve/serve_search.h"
#include "compiler/serve/serving_cost.h"
#include "compiler/serve/serving_model.h"
#include "hardware/serving_engine.h"

namespace symtensor::driver {
namespace {

struct ServeOptions {
  ModelChoice input;
  std::string profile, stack = "trtllm", precision = "bf16", kv_precision, trace;
  std::optional<int> nodes, gpus;
  compiler::ServingLayout layout;
  long long input_len = 0, output_len = 0;
  std::optional<double> rate;
  std::optional<int> concurrency;
  bool offline = false, json = false;
  int requests = 1000;
  unsigned long long seed = 1;
  double slo_ttft = 0, slo_tpot = 0;
  const CLI::Option* tp_option = nullptr;
};

hardware::Precision precision_of(const std::string& text, const std::string& flag) {
  const auto p = hardware::parse_precision(text);
  if (!p) throw std::runtime_error(fmt::format("{}: unknown precision '{}' (fp32, bf16, fp16, fp8, fp4)", flag, text));
  return *p;
}

void run_serve(const ServeOptions& o) {
  const int modes = (o.offline ? 1 : 0) + (o.rate ? 1 : 0) + (o.concurrency ? 1 : 0) + (o.trace.empty() ? 0 : 1);
  if (modes > 1) throw std::runtime_error("serve: give at most one of --offline, --rate, --concurrency and --trace");
  if (o.trace.empty() && (o.input_len < 1 || o.output_len < 1))
    throw std::runtime_error("serve: --input-len and --output-len must be at least 1 (or give --trace FILE)");
  if (o.requests < 1) throw std::runtime_error("serve: --requests must be at least 1");
  if (o.slo_ttft < 0 || o.slo_tpot < 0) throw std::runtime_error("serve: --slo-ttft and --slo-tpot must be positive");

  sim::ServingWorkload w;
  w.requests = o.requests;
  w.input_tokens = o.input_len;
  w.output_tokens = o.output_len;
  w.seed = o.seed;
  if (o.rate) {
    if (!(*o.rate > 0)) throw std::runtime_error("serve: --rate must be positive");
    w.mode = sim::ArrivalMode::poisson;
    w.rate = *o.rate;
  } else if (o.concurrency) {
    if (*o.concurrency < 1) throw std::runtime_error("serve: --concurrency must be at least 1");
    w.mode = sim::ArrivalMode::closed_loop;
    w.concurrency = *o.concurrency;
  } else if (!o.trace.empty()) {
    w.mode = sim::ArrivalMode::trace;
    w.trace = sim::read_request_trace(o.trace);
  }

  compiler::ServingPrecision precision;
  precision.weights = precision_of(o.precision, "--precision");
  precision.kv = o.kv_precision.empty()
                     ? (hardware::is_low_precision(precision.weights) ? hardware::Precision::fp8 : precision.weights)
                     : precision_of(o.kv_precision, "--kv-precision");
  hardware::ServingEngine engine = hardware::load_serving_engine(o.stack);

  const bool search = o.tp_option->count() == 0 && o.rate && (o.slo_ttft > 0 || o.slo_tpot > 0);
  ModelChoice input = o.input;
  if (input.bind.empty())
    input.bind = fmt::format("batch=1,seq={}", std::max<long long>(1, o.trace.empty() ? o.input_len : 128));
  compiler::Graph graph = import_model(input, !o.json);
  std::string name = o.input.path.substr(o.input.path.find_last_of('/') + 1);
  if (search) {
    if (!o.trace.empty()) throw std::runtime_error("serve: the search takes --rate with --input-len and --output-len, not --trace");
    const compiler::ServingModel model = compiler::read_serving_model(graph, name);
    compiler::ServeSearchOptions so;
    so.rate = *o.rate;
    so.input_tokens = o.input_len;
    so.output_tokens = o.output_len;
    so.slo = sim::ServingSlo{o.slo_ttft, o.slo_tpot};
    so.seed = o.seed;
    std::stringstream profiles(o.profile);
    for (std::string profile; std::getline(profiles, profile, ',');) {
      const hardware::Cluster c = hardware::scale_cluster(hardware::load_cluster(profile), o.nodes, o.gpus);
      std::cout << compiler::serve_search_text(compiler::search_serving(model, precision, c, engine, so), c, so) << "\n";
    }
    return;
  }
  hardware::Cluster cluster = hardware::scale_cluster(hardware::load_cluster(o.profile), o.nodes, o.gpus);
  const compiler::ServingCost cost(compiler::read_serving_model(graph, name), o.layout, precision, std::move(cluster),
                                   std::move(engine));

  sim::ServingProgress progress;
  if (isatty(STDERR_FILENO))
    progress = [](double share) { std::cerr << fmt::format("\rserve: {:3.0f}% of requests done", 100 * share) << std::flush; };
  const compiler::ServeResult r = compiler::run_serving(cost, w, sim::ServingSlo{o.slo_ttft, o.slo_tpot}, progress);
  if (progress) std::cerr << "\r" << std::string(40, ' ') << "\r" << std::flush;
  if (o.json) std::cout << compiler::serve_json(cost, r).dump(2) << "\n";
  else std::cout << compiler::serve_text(cost, r);
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve a model: KV cache, prefill/decode step times, and a simulation of requests "
                                              "under continuous batching (TTFT, TPOT, throughput, goodput)");
  cmd->add_option("model", o->input.path, "ONNX model file (a decoder)")->required();
  cmd->add_option("--cluster", o->profile, "cluster profile (see `hardware list`), NAMExNODES or a .yaml path")->required();
  cmd->add_option("--nodes", o->nodes, "number of nodes (size of the outermost level)");
  cmd->add_option("--gpus", o->gpus, "GPUs used in each node");
  cmd->add_option("--bind", o->input.bind, "bind dim symbols (default batch=1,seq=INPUT_LEN; the weights do not depend on them)");
  add_attention_option(cmd, o->input.attention);
  add_dim_options(cmd, o->input.batch_dim, o->input.sequence_dim);
  o->tp_option = cmd->add_option("--tp", o->layout.tp,
                                 "tensor-parallel GPUs per replica (without it, --rate and an SLO search the layouts)")
                     ->capture_default_str();
  cmd->add_option("--pp", o->layout.pp, "pipeline stages per replica")->capture_default_str();
  cmd->add_option("--ep", o->layout.ep, "expert-parallel ways inside the tensor-parallel group (MoE)")->capture_default_str();
  cmd->add_option("--replicas", o->layout.replicas, "data-parallel model replicas sharing the requests")->capture_default_str();
  cmd->add_option("--input-len", o->input_len, "prompt tokens per request");
  cmd->add_option("--output-len", o->output_len, "output tokens per request");
  cmd->add_option("--precision", o->precision, "weights and GEMMs: bf16, fp16, fp8, fp4")->capture_default_str();
  cmd->add_option("--kv-precision", o->kv_precision, "KV cache (default: fp8 with fp8/fp4 weights, else the weights')");
  cmd->add_option("--stack", o->stack, "serving engine: trtllm, vllm, sglang or a .yaml path (hardware/engines/README.md)")
      ->capture_default_str();
  cmd->add_flag("--offline", o->offline, "every request at once (the default arrival)");
  cmd->add_option("--rate", o->rate, "Poisson arrivals, requests/s (seeded by --seed)");
  cmd->add_option("--concurrency", o->concurrency, "closed loop: this many users, each sending its next request when one ends");
  cmd->add_option("--trace", o->trace, "requests from a file, one a line: arrival_s,input_tokens,output_tokens");
  cmd->add_option("--requests", o->requests, "requests to simulate (not with --trace)")->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed of the Poisson arrivals")->capture_default_str();
  cmd->add_option("--slo-ttft", o->slo_ttft, "goodput: time to first token limit, seconds");
  cmd->add_option("--slo-tpot", o->slo_tpot, "goodput: time per output token limit, seconds");
  cmd->add_flag("--json", o->json, "print JSON: ttft_s, tpot_s, itl_s, e2e_s (means), their _p50_s/_p90_s/_p99_s, output_tokens_per_s, ...");
  cmd->callback([o] { run_serve(*o); });
}

}  // namespace symtensor::driver
