// serve --onnx -o DIR: the decode step per rank (serve_onnx.h).
#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "compiler/driver/serve_onnx.h"
#include "compiler/onnx_import/proto_reading.h"
#include "compiler/rewrite/kv_cache.h"
#include "compiler/rewrite/sharded_onnx.h"
#include "compiler/strategies/megatron.h"
#include "simulator/stats/atomic_write.h"

namespace symtensor::driver {
namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s;
  for (auto d : shape) s += (s.empty() ? "" : ",") + std::to_string(d);
  return "[" + s + "]";
}

// The default bindings of a decode step (serve_onnx.h), from the inputs' dim names.
std::string default_bindings(const onnx::ModelProto& model, const std::vector<compiler::KvCachePair>& cache,
                             long long cache_tokens, int replicas) {
  std::map<std::string, long long> values;
  std::set<std::string> initializers;
  for (const auto& t : model.graph().initializer()) initializers.insert(t.name());
  for (const auto& p : cache)
    for (const auto& in : model.graph().input())
      if (in.name() == p.past && p.axis >= 0 && p.axis < in.type().tensor_type().shape().dim_size()) {
        const auto& dim = in.type().tensor_type().shape().dim(static_cast<int>(p.axis));
        if (dim.has_dim_param()) {
          if (cache_tokens < 1)
            throw std::runtime_error(fmt::format("serve --onnx: give --input-len (the tokens in the KV cache, bound to '{}') or --bind",
                                                 dim.dim_param()));
          values[dim.dim_param()] = cache_tokens;
        }
      }
  for (const auto& in : model.graph().input()) {
    if (initializers.count(in.name())) continue;
    const auto& shape = in.type().tensor_type().shape();
    for (int d = 0; d < shape.dim_size(); ++d)
      if (shape.dim(d).has_dim_param()) values.emplace(shape.dim(d).dim_param(), d == 0 ? replicas : 1);
  }
  std::string text;
  for (const auto& [k, v] : values) text += (text.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return text;
}

// The cluster cut down to the layout's GPUs: one node when they fit in one, else whole nodes.
hardware::Cluster layout_cluster(const hardware::Cluster& cluster, int gpus) {
  if (gpus > cluster.num_devices())
    throw std::runtime_error(fmt::format("serve --onnx: the layout needs {} GPUs, {} has {}", gpus, cluster.name,
                                         cluster.num_devices()));
  const int per_node = cluster.devices_per_node();
  if (gpus <= per_node) return hardware::scale_cluster(cluster, 1, gpus);
  if (gpus % per_node != 0)
    throw std::runtime_error(fmt::format("serve --onnx: the layout's {} GPUs are not whole nodes of {}", gpus, per_node));
  return hardware::scale_cluster(cluster, gpus / per_node, std::nullopt);
}

}  // namespace

void write_serve_onnx(const ServeOnnxRequest& r) {
  sim::check_output_dir(r.dir, "-o");
  onnx::ModelProto original = compiler::read_model_file(r.input.path);
  const std::vector<compiler::KvCachePair> cache = compiler::find_kv_cache(original);
  if (cache.empty())
    throw std::runtime_error(fmt::format(
        "serve --onnx: {} is not a decode step: no graph output concatenates a graph input (the past keys/values) with "
        "the new token's; write one with `symtensor models NAME --decode-step -o step.onnx` (llama family, or "
        "--hf-config), or export the model called with its cache (past_key_values in, present out)",
        r.input.path));
  compiler::inline_external_data(original, r.input.path);
  ModelChoice input = r.input;
  if (input.bind.empty()) {
    input.bind = default_bindings(original, cache, r.cache_tokens, r.layout.replicas);
    std::cerr << fmt::format("serve --onnx: bound {} (--bind to change)\n", input.bind);
  }
  compiler::Graph graph = import_model(input, true);
  const hardware::Cluster cluster = layout_cluster(r.cluster, r.layout.gpus());
  std::string knobs = fmt::format("tp={},pp={},dp={},mb=1", r.layout.tp, r.layout.pp, r.layout.replicas);
  if (r.layout.ep > 1) knobs += fmt::format(",ep={},etp=1", r.layout.ep);  // the experts spread over the tp group (serving's --ep)
  const compiler::StrategyOptions options = strategy_options("infer", r.precision, knobs, "");
  compiler::Plan plan = compiler::make_megatron_plan(graph, cluster, compiler::parse_megatron_knobs(knobs), options);
  const std::vector<long> pieces = compiler::cut_kv_cache_updates(graph, plan, cluster, cache);
  const long ranks = static_cast<long>(r.layout.tp) * r.layout.replicas;
  for (std::size_t i = 0; i < cache.size(); ++i)
    if (pieces[i] != ranks)  // tp above the KV heads: each rank would need copies of some heads (vLLM replicates them)
      throw std::runtime_error(fmt::format(
          "serve --onnx: the KV cache '{}' is cut into {} pieces, not tp x replicas = {}: tp must divide its KV heads "
          "(and the replicas its batch); replicated KV heads are not written",
          cache[i].past, pieces[i], ranks));
  const compiler::ShardedOnnxSummary summary = compiler::write_sharded_onnx(
      original, graph, plan, cluster, r.dir, compiler::Mutation::none, compiler::kept_outputs_of(cache));

  std::cout << fmt::format("decode step of {} on {} ({} GPUs): tp={} pp={} replicas={}, Megatron's cuts, inference\n",
                           r.input.path, cluster.name, cluster.num_devices(), r.layout.tp, r.layout.pp, r.layout.replicas);
  std::cout << fmt::format("KV cache per rank ({} inputs, each present output kept in its past input's cut):\n",
                           summary.kept.size());
  for (const auto& k : summary.kept)
    std::cout << fmt::format("  {:<24}{} of {} -> {}\n", k.input, shape_text(k.local), shape_text(k.global), k.output);
  std::cout << fmt::format("sharded ONNX written to {} ({} collectives):", r.dir, summary.collectives);
  for (const auto& f : summary.files) std::cout << " " << f;
  std::cout << fmt::format("\ncheck it: symtensor verify {} {}\n", r.input.path, r.dir);
}

}  // namespace symtensor::driver
