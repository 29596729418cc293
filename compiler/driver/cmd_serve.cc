// symtensor serve MODEL.onnx --cluster PROFILE [--nodes N] [--gpus G] --tp T [--pp P] [--ep E] [--replicas R]
//   --input-len I --output-len O [--precision bf16|fp8|...] [--kv-precision P] [--stack trtllm|vllm|sglang|FILE]
//   [--offline | --rate R | --concurrency K | --trace FILE] [--requests N] [--seed S]
//   [--slo-ttft S] [--slo-tpot S] [--json] [--export vllm|sglang|trtllm -o FILE]
//   [--disaggregate --prefill-tp T1 [--prefill-pp P1] --prefill-replicas A --decode-tp T2 [--decode-pp P2] --decode-replicas B]
//   [--onnx -o DIR: a decode step's program per rank under --tp/--pp/--replicas (driver/serve_onnx.h)]
// Without --tp, with --rate and an SLO: the layout search (compiler/serve/serve_search.h) on each
// cluster of --cluster A,B,...
// Serving a model (issue #33): KV-cache memory and the batch it allows, prefill and decode
// step times (compiler/serve/serving_cost.h), and a discrete-event simulation of requests
// under continuous batching (simulator/serving/serving.h): TTFT, TPOT, ITL, end-to-end
// latency, throughput per GPU and goodput under SLOs.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>
#include <memory>

#include <fmt/format.h>

#include "compiler/driver/command_setup.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/serve_onnx.h"
#include "compiler/serve/serve_disaggregated.h"
#include "compiler/serve/serve_export.h"
#include "compiler/serve/serve_report.h"
#include "compiler/serve/serve_search.h"
#include "compiler/serve/serving_cost.h"
#include "compiler/serve/serving_model.h"
#include "hardware/serving_engine.h"
#include "simulator/stats/atomic_write.h"

namespace symtensor::driver {
namespace {

struct ServeOptions {
  ModelChoice input;
  std::string profile, stack = "trtllm", precision = "bf16", kv_precision, trace, export_target, output;
  std::optional<int> nodes, gpus;
  compiler::ServingLayout layout, prefill, decode;
  bool disaggregate = false;
  long long input_len = 0, output_len = 0;
  std::optional<double> rate;
  std::optional<int> concurrency;
  bool offline = false, json = false, onnx = false;
  int requests = 1000;
  unsigned long long seed = 1;
  double slo_ttft = 0, slo_tpot = 0;
  const CLI::Option* tp_option = nullptr;
  const CLI::Option* stack_option = nullptr;
};

hardware::Precision precision_of(const std::string& text, const std::string& flag) {
  const auto p = hardware::parse_precision(text);
  if (!p) throw std::runtime_error(fmt::format("{}: unknown precision '{}' (fp32, bf16, fp16, fp8, fp4)", flag, text));
  return *p;
}

void run_serve(const ServeOptions& o) {
  if (o.onnx) {
    if (!o.export_target.empty() || o.disaggregate)
      throw std::runtime_error("serve: --onnx writes the decode step of one fixed layout, not with --export or --disaggregate");
    if (o.output.empty()) throw std::runtime_error("serve: --onnx needs -o DIR (the per-rank ONNX files)");
    if (o.tp_option->count() == 0) throw std::runtime_error("serve: --onnx writes a fixed layout: give --tp (and --pp, --replicas)");
    write_serve_onnx({o.input, hardware::scale_cluster(hardware::load_cluster(o.profile), o.nodes, o.gpus), o.layout,
                      o.precision, o.input_len, o.output});
    return;
  }
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
  std::optional<compiler::ServeExportTarget> target;
  if (!o.export_target.empty()) {
    target = compiler::parse_serve_export_target(o.export_target);
    if (!target) throw std::runtime_error(fmt::format("serve: --export '{}' is not vllm, sglang or trtllm", o.export_target));
    if (o.output.empty()) throw std::runtime_error("serve: --export needs -o FILE (the launch script)");
    if (o.tp_option->count() == 0) throw std::runtime_error("serve: --export writes a fixed layout: give --tp (and --pp, --ep, --replicas)");
  } else if (!o.output.empty()) {
    throw std::runtime_error("serve: -o FILE is the --export script; give --export vllm|sglang|trtllm");
  }
  // Exported, the plan is priced with the target's engine unless --stack says otherwise (then refused).
  hardware::ServingEngine engine = hardware::load_serving_engine(
      target && o.stack_option->count() == 0 ? std::string(compiler::serve_export_target_name(*target)) : o.stack);

  const bool search = !o.disaggregate && o.tp_option->count() == 0 && o.rate && (o.slo_ttft > 0 || o.slo_tpot > 0);
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
  if (o.disaggregate) {
    if (target) throw std::runtime_error("serve: --export writes one aggregated layout, not --disaggregate's two pools");
    if (o.tp_option->count() > 0) throw std::runtime_error("serve: --disaggregate takes --prefill-tp and --decode-tp, not --tp");
    const compiler::ServingModel model = compiler::read_serving_model(graph, name);
    compiler::ServingLayout pl = o.prefill, dl = o.decode;
    pl.ep = dl.ep = o.layout.ep;
    const compiler::ServingCost pc(model, pl, precision, cluster, engine);
    const compiler::ServingCost dc(model, dl, precision, cluster, engine);
    const compiler::ServeResult r = compiler::run_disaggregated(pc, dc, w, sim::ServingSlo{o.slo_ttft, o.slo_tpot});
    if (o.json) std::cout << compiler::disaggregated_json(pc, dc, r).dump(2) << "\n";
    else std::cout << compiler::disaggregated_text(pc, dc, r);
    return;
  }
  const compiler::ServingCost cost(compiler::read_serving_model(graph, name), o.layout, precision, std::move(cluster),
                                   std::move(engine));

  if (target) {
    const std::string options_path = compiler::serve_options_path(o.output);
    const compiler::ServeExport ex = compiler::export_serving(cost, *target, options_path);
    if (!ex.options_yaml.empty()) sim::write_file_atomically(options_path, ex.options_yaml);
    try {
      sim::write_file_atomically(o.output, ex.script);
    } catch (...) {
      if (!ex.options_yaml.empty()) std::remove(options_path.c_str());
      throw;
    }
    std::cerr << fmt::format("serve: wrote {}{}\n", o.output, ex.options_yaml.empty() ? "" : " and " + options_path);
  }
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
  o->stack_option = cmd->add_option("--stack", o->stack, "serving engine: trtllm, vllm, sglang or a .yaml path (hardware/engines/README.md)")
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
  cmd->add_flag("--disaggregate", o->disaggregate,
                "separate prefill and decode pools, each request's KV cache sent between them (TTFT includes it)");
  cmd->add_option("--prefill-tp", o->prefill.tp, "--disaggregate: tensor-parallel GPUs of a prefill replica")->capture_default_str();
  cmd->add_option("--prefill-pp", o->prefill.pp, "--disaggregate: pipeline stages of a prefill replica")->capture_default_str();
  cmd->add_option("--prefill-replicas", o->prefill.replicas, "--disaggregate: prefill replicas")->capture_default_str();
  cmd->add_option("--decode-tp", o->decode.tp, "--disaggregate: tensor-parallel GPUs of a decode replica")->capture_default_str();
  cmd->add_option("--decode-pp", o->decode.pp, "--disaggregate: pipeline stages of a decode replica")->capture_default_str();
  cmd->add_option("--decode-replicas", o->decode.replicas, "--disaggregate: decode replicas")->capture_default_str();
  cmd->add_option("--export", o->export_target,
                  "write the launch command of the layout: vllm (vllm serve), sglang (sglang.launch_server) or trtllm "
                  "(trtllm-serve and FILE.llm_api_options.yaml); priced with that engine unless --stack is given");
  cmd->add_flag("--onnx", o->onnx, "write the decode step per rank under --tp/--pp/--replicas (a model with KV-cache "
                                   "inputs and outputs; the cache cut on its heads) to -o DIR; check it with `symtensor verify`");
  cmd->add_option("-o,--output", o->output, "the --export launch script, or the --onnx directory");
  cmd->callback([o] { run_serve(*o); });
}

}  // namespace symtensor::driver
