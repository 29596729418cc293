// Reading plan.yaml back (the format is described in plan_yaml.h).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "compiler/analysis/model_stats.h"
#include "compiler/plan/batch_shares.h"
#include "compiler/plan/plan_yaml.h"

namespace symtensor::compiler {
namespace {

// Every error names the file, the line and the key.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const YAML::Node& node, const std::string& key, const std::string& problem) const {
    const int line = node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
    throw std::runtime_error(fmt::format("{}:{}: key '{}': {}", source_, line, key, problem));
  }
  YAML::Node need(const YAML::Node& map, const std::string& key, const std::string& path) const {
    if (!map.IsMap()) fail(map, path, "expected a mapping");
    const YAML::Node v = map[key];
    if (!v) fail(map, path, "missing");
    return v;
  }
  template <typename T>
  T get(const YAML::Node& map, const std::string& key, const std::string& path) const {
    const YAML::Node v = need(map, key, path);
    try {
      if (!v.IsScalar()) throw YAML::Exception(v.Mark(), "not a scalar");
      return v.as<T>();
    } catch (const YAML::Exception&) {
      fail(v, path, "not a valid value" + (v.IsScalar() ? ": '" + v.Scalar() + "'" : std::string()));
    }
  }
  template <typename F>
  auto parse(const YAML::Node& map, const std::string& key, const std::string& path, F&& f) const {
    const std::string text = get<std::string>(map, key, path);
    try {
      return f(text);
    } catch (const std::exception& e) {
      fail(map[key], path, e.what());
    }
  }
  void only_keys(const YAML::Node& map, const std::string& where, const std::set<std::string>& known) const {
    if (!map.IsMap()) fail(map, where, "expected a mapping");
    for (const auto& kv : map) {
      const std::string key = kv.first.as<std::string>();
      if (!known.count(key)) fail(kv.first, where.empty() ? key : where + "." + key, "unknown key");
    }
  }
  void sequence(const YAML::Node& node, const std::string& path) const {
    if (!node.IsSequence()) fail(node, path, "expected a list");
  }

 private:
  std::string source_;
};

void read_mesh(const Reader& r, const YAML::Node& root, const hardware::Cluster& cluster, Plan& plan) {
  const YAML::Node mesh = r.need(root, "mesh", "mesh");
  r.only_keys(mesh, "mesh", {"levels", "axes", "pipeline_axis"});
  const YAML::Node levels = r.need(mesh, "levels", "mesh.levels");
  r.sequence(levels, "mesh.levels");
  if (levels.size() != cluster.levels.size())
    r.fail(levels, "mesh.levels", fmt::format("{} levels, but cluster '{}' has {}", levels.size(), cluster.name, cluster.levels.size()));
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const std::string path = fmt::format("mesh.levels[{}]", i);
    r.only_keys(levels[i], path, {"level", "factors"});
    const std::string name = r.get<std::string>(levels[i], "level", path + ".level");
    const std::string& expected = cluster.levels[cluster.levels.size() - 1 - i].name;
    if (name != expected) r.fail(levels[i], path + ".level", "'" + name + "', expected '" + expected + "' (outermost first)");
    const YAML::Node factors = r.need(levels[i], "factors", path + ".factors");
    r.sequence(factors, path + ".factors");
    std::vector<int> f;
    for (const auto& x : factors) {
      try {
        f.push_back(x.as<int>());
      } catch (const YAML::Exception&) {
        r.fail(x, path + ".factors", "not an integer");
      }
    }
    plan.mesh_factors.push_back(f);
  }
  hardware::DeviceMesh m;
  try {
    m = plan_mesh(plan, cluster);
  } catch (const std::exception& e) {
    r.fail(levels, "mesh.levels", e.what());
  }
  const std::string pipeline = r.get<std::string>(mesh, "pipeline_axis", "mesh.pipeline_axis");
  if (pipeline != "none") {
    plan.pipeline_axis = m.axis_index(pipeline);
    if (plan.pipeline_axis < 0) r.fail(mesh["pipeline_axis"], "mesh.pipeline_axis", "no mesh axis '" + pipeline + "'");
  }
}

// A cut of a loop that grows with the batch must split every micro-batch into whole pieces:
// micro-batches that divide the batch but leave one a part of a sample to each of the ways a
// node is cut over fail here, at batch.micro_batches, rather than deep in the analysis
// ("loop 'd0' of extent 2 does not split 4 ways"). A loop that does not split at the global
// batch either is a bad cut, the analysis's to say.
class MicroBatchCheck {
 public:
  MicroBatchCheck(const Reader& r, const YAML::Node& micro, const Graph& graph, const Plan& plan)
      : r_(r), micro_(micro), graph_(graph), plan_(plan) {
    if (plan.micro_batches > 1 && graph.symbols.bindings().count(graph.batch_dim)) at_micro_ = graph.symbols;
  }

  void check(const std::string& node, const IterationSpace& space, const NodeCut& cut, const hardware::DeviceMesh& mesh) {
    if (!at_micro_) return;
    for (std::size_t l = 0; l < cut.loop_axes.size(); ++l) {
      if (cut.loop_axes[l].empty() || cut.padded_extents.count(static_cast<int>(l))) continue;
      long long ways = 1;
      for (int a : cut.loop_axes[l]) ways *= mesh.axes()[a].size;
      const GiNaC::ex& extent = space.loops[l].extent;
      const std::optional<double> global = graph_.symbols.evaluate(extent);
      const std::optional<double> micro = extent_at(extent, plan_.micro_batches);
      if (!global || !micro || *micro == *global || !splits(*global, ways) || splits(*micro, ways)) continue;
      int fewer = plan_.micro_batches - 1;  // 1 always splits: it is the global batch
      while (fewer > 1 && !(std::fmod(plan_.global_batch, fewer) == 0 && splits(extent_at(extent, fewer).value_or(0), ways)))
        --fewer;
      r_.fail(micro_, "batch.micro_batches",
              fmt::format("{} leaves micro-batches of {} sample{}, and node '{}' cuts its loop '{}' (extent {} a micro-batch) "
                          "{} ways: each way needs whole samples of every micro-batch; {} would do",
                          plan_.micro_batches, plan_.global_batch / plan_.micro_batches,
                          plan_.global_batch == plan_.micro_batches ? "" : "s", node, space.loops[l].name, *micro, ways,
                          fewer == 1 ? std::string("1 micro-batch") : fmt::format("{} micro-batches", fewer)));
    }
  }

 private:
  static bool splits(double extent, long long ways) { return extent >= ways && std::fmod(extent, ways) == 0; }
  // The extent with the batch split into `count` micro-batches.
  std::optional<double> extent_at(const GiNaC::ex& extent, int count) {
    at_micro_->bind(graph_.batch_dim, plan_.global_batch / count);
    return at_micro_->evaluate(extent);
  }

  const Reader& r_;
  YAML::Node micro_;
  const Graph& graph_;
  const Plan& plan_;
  std::optional<SymbolTable> at_micro_;  // the model's dims, the batch bound per micro-batch
};

void read_nodes(const Reader& r, const YAML::Node& root, Graph& graph, const hardware::DeviceMesh& mesh, Plan& plan,
                MicroBatchCheck& micro_batches) {
  const YAML::Node nodes = r.need(root, "nodes", "nodes");
  r.sequence(nodes, "nodes");
  std::map<std::string, NodeId> by_name;
  for (NodeId id = 0; id < static_cast<NodeId>(graph.nodes().size()); ++id) by_name.emplace(graph.node(id).name, id);
  const std::size_t n = graph.nodes().size();
  plan.stage_of_node.assign(n, 0);
  plan.node_cuts.assign(n, NodeCut{});
  std::vector<bool> seen(n, false);
  const int stages = plan.pipeline_stages();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const YAML::Node entry = nodes[i];
    const std::string path = fmt::format("nodes[{}]", i);
    r.only_keys(entry, path, {"name", "op", "stage", "cut", "padded"});
    const std::string name = r.get<std::string>(entry, "name", path + ".name");
    const auto it = by_name.find(name);
    // Plans written before the import folded Constant nodes into constants list them: they
    // had one cut (none) and take no place in the plan.
    if (it == by_name.end() && entry["op"] && entry["op"].IsScalar() && entry["op"].as<std::string>() == "Constant" &&
        (!entry["cut"] || entry["cut"].size() == 0))
      continue;
    if (it == by_name.end()) r.fail(entry["name"], path + ".name", "the model has no node '" + name + "'");
    const NodeId id = it->second;
    if (seen[id]) r.fail(entry["name"], path + ".name", "node '" + name + "' is listed twice");
    seen[id] = true;
    const int stage = r.get<int>(entry, "stage", path + ".stage");
    if (stage < 0 || stage >= stages)
      r.fail(entry["stage"], path + ".stage", fmt::format("stage {} of node '{}' is not in 0..{}", stage, name, stages - 1));
    plan.stage_of_node[id] = stage;
    const IterationSpace space = iteration_space_of(graph, id);
    const std::vector<std::string> keys = plan_loop_keys(space);
    plan.node_cuts[id].loop_axes.assign(space.loops.size(), {});
    const auto loop_index = [&](const YAML::Node& at, const std::string& key, const std::string& loop) {
      const auto k = std::find(keys.begin(), keys.end(), loop);
      if (k == keys.end()) {
        std::string known;
        for (const auto& s : keys) known += (known.empty() ? "" : ", ") + s;
        r.fail(at, key, "node '" + name + "' has no loop '" + loop + "' (loops: " + known + ")");
      }
      return static_cast<int>(k - keys.begin());
    };
    if (const YAML::Node padded = entry["padded"]) {
      if (!padded.IsMap()) r.fail(padded, path + ".padded", "expected a mapping loop -> padded extent");
      for (const auto& kv : padded) {
        const std::string loop = kv.first.as<std::string>();
        const std::string key = path + ".padded." + loop;
        const int l = loop_index(kv.first, key, loop);
        long long extent = 0;
        try {
          extent = kv.second.as<long long>();
        } catch (const YAML::Exception&) {
          r.fail(kv.second, key, "not an integer");
        }
        if (extent < 1) r.fail(kv.second, key, "expected a positive extent");
        plan.node_cuts[id].padded_extents[l] = extent;
      }
    }
    const YAML::Node cut = entry["cut"];
    if (!cut) continue;
    if (!cut.IsMap()) r.fail(cut, path + ".cut", "expected a mapping loop -> [axes]");
    std::set<int> used;
    for (const auto& kv : cut) {
      const std::string loop = kv.first.as<std::string>();
      const std::string key = path + ".cut." + loop;
      const int l = loop_index(kv.first, key, loop);
      r.sequence(kv.second, key);
      std::vector<int> axes;
      for (const auto& a : kv.second) {
        const std::string axis = a.as<std::string>();
        const int id_axis = mesh.axis_index(axis);
        if (id_axis < 0) r.fail(a, key, "no mesh axis '" + axis + "'");
        if (id_axis == plan.pipeline_axis) r.fail(a, key, "'" + axis + "' is the pipeline axis");
        if (!used.insert(id_axis).second) r.fail(a, key, "axis '" + axis + "' is used twice in node '" + name + "'");
        axes.push_back(id_axis);
      }
      plan.node_cuts[id].loop_axes[l] = axes;
    }
    micro_batches.check(name, space, plan.node_cuts[id], mesh);
  }
  for (NodeId id = 0; id < static_cast<NodeId>(n); ++id)
    if (!seen[id]) r.fail(nodes, "nodes", "node '" + graph.node(id).name + "' of the model is missing");
}

}  // namespace

Plan plan_from_yaml(const std::string& text, const std::string& source, Graph& graph, const hardware::Cluster& loaded) {
  const Reader r(source);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw std::runtime_error(fmt::format("{}:{}: {}", source, e.mark.line + 1, e.msg));
  }
  r.only_keys(root, "", {"format", "strategy", "model", "cluster", "stack", "mode", "precision", "mesh", "batch", "schedule",
                         "virtual_stages", "recompute", "recompute_layers", "offload_layers", "zero_stage", "stage_zero_stages", "distributed_optimizer", "replicate_axes", "sequence_parallel",
                         "context_parallel_comm", "moe_dispatcher", "moe_comm_overlap", "moe_load_imbalance", "nodes", "inputs",
                         "tensors", "predicted"});
  const std::string format = r.get<std::string>(root, "format", "format");
  if (format != "symtensor-plan/1") r.fail(root["format"], "format", "'" + format + "', expected 'symtensor-plan/1'");
  Plan plan;
  plan.strategy = r.get<std::string>(root, "strategy", "strategy");
  plan.model = r.get<std::string>(root, "model", "model");
  plan.cluster = r.get<std::string>(root, "cluster", "cluster");
  // On a mixed fleet the plan may run on some of its groups (compile keeps the fastest plan,
  // which may leave groups out, as cluster_of_plan finds): it is read against that part.
  const std::optional<hardware::Cluster> part = hardware::fleet_part_named(loaded, plan.cluster);
  const hardware::Cluster& cluster = part ? *part : loaded;
  if (root["stack"].IsDefined()) plan.stack = r.get<std::string>(root, "stack", "stack");
  if (root["inputs"].IsDefined()) plan.inputs = plan_inputs_from_yaml(root["inputs"], source);
  plan.mode = r.parse(root, "mode", "mode", [](const std::string& s) { return parse_execution_mode(s); });
  plan.precision = r.parse(root, "precision", "precision", [](const std::string& s) {
    auto p = hardware::parse_precision(s);
    if (!p) throw std::runtime_error("unknown precision '" + s + "' (known: fp32, tf32, fp16, bf16, fp8, mxfp8, fp4)");
    return *p;
  });
  read_mesh(r, root, cluster, plan);
  const YAML::Node batch = r.need(root, "batch", "batch");
  r.only_keys(batch, "batch", {"global", "micro_batches", "group_micro_batches"});
  plan.global_batch = r.get<double>(batch, "global", "batch.global");
  if (plan.global_batch <= 0) r.fail(batch["global"], "batch.global", "must be positive");
  // The plan was made for its batch; a model bound to another would be priced silently at the
  // plan's (the cuts and micro-batches were chosen for it).
  if (const auto bound = graph.symbols.bindings().find(graph.batch_dim);
      !graph.batch_dim.empty() && bound != graph.symbols.bindings().end() && bound->second != plan.global_batch)
    r.fail(batch["global"], "batch.global",
           fmt::format("{} differs from the model's --bind {}={}: compile the plan again for that batch, or bind {}={}",
                       plan.global_batch, graph.batch_dim, bound->second, graph.batch_dim, plan.global_batch));
  plan.micro_batches = r.get<int>(batch, "micro_batches", "batch.micro_batches");
  if (plan.micro_batches < 1) r.fail(batch["micro_batches"], "batch.micro_batches", "must be at least 1");
  if (std::fmod(plan.global_batch, plan.micro_batches) != 0)
    r.fail(batch["micro_batches"], "batch.micro_batches",
           fmt::format("{} does not divide the global batch {} (batch.global); the micro-batches must split it into whole "
                       "samples (and each data-parallel rank's share)",
                       plan.micro_batches, plan.global_batch));
  if (const YAML::Node shares = batch["group_micro_batches"]; shares.IsDefined()) {
    r.sequence(shares, "batch.group_micro_batches");
    for (const YAML::Node& n : shares) {
      int v = 0;
      try {
        v = n.as<int>();
      } catch (const YAML::Exception&) {
      }
      if (v < 1) r.fail(n, "batch.group_micro_batches", "expected a count of micro-batches (1 or more)");
      plan.group_micro_batches.push_back(v);
    }
    if (const std::string problem = batch_shares_problem(plan, cluster); !problem.empty())
      r.fail(shares, "batch.group_micro_batches", problem);
  }
  plan.schedule = r.parse(root, "schedule", "schedule", [](const std::string& s) { return parse_schedule(s); });
  plan.virtual_stages = r.get<int>(root, "virtual_stages", "virtual_stages");
  if (plan.virtual_stages < 1) r.fail(root["virtual_stages"], "virtual_stages", "must be at least 1");
  plan.recompute = r.parse(root, "recompute", "recompute", [](const std::string& s) { return parse_recompute(s); });
  if (const YAML::Node layers = root["recompute_layers"]; layers.IsDefined()) {
    r.sequence(layers, "recompute_layers");
    if (plan.recompute != RecomputePolicy::full) r.fail(layers, "recompute_layers", "needs recompute: full");
    for (const YAML::Node& n : layers) {
      int v = -1;
      try {
        v = n.as<int>();
      } catch (const YAML::Exception&) {
      }
      if (v < 0) r.fail(n, "recompute_layers", "expected a count of layers (0 or more)");
      plan.recompute_layers.push_back(v);
    }
  }
  if (root["offload_layers"].IsDefined()) {
    plan.offload_layers = r.get<int>(root, "offload_layers", "offload_layers");
    if (plan.offload_layers < 0) r.fail(root["offload_layers"], "offload_layers", "must be 0 or more");
  }
  plan.zero_stage = r.get<int>(root, "zero_stage", "zero_stage");
  if (plan.zero_stage < 0 || plan.zero_stage > 3) r.fail(root["zero_stage"], "zero_stage", "must be 0..3");
  if (const YAML::Node stages = root["stage_zero_stages"]; stages.IsDefined()) {
    r.sequence(stages, "stage_zero_stages");
    for (const YAML::Node& n : stages) {
      int v = -1;
      try {
        v = n.as<int>();
      } catch (const YAML::Exception&) {
      }
      if (v < 0 || v > 3) r.fail(n, "stage_zero_stages", "expected a ZeRO stage 0..3");
      plan.stage_zero_stages.push_back(v);
    }
    if (static_cast<int>(plan.stage_zero_stages.size()) != plan.pipeline_stages())
      r.fail(stages, "stage_zero_stages",
             fmt::format("{} ZeRO stages for {} pipeline stages", plan.stage_zero_stages.size(), plan.pipeline_stages()));
    const int least = *std::min_element(plan.stage_zero_stages.begin(), plan.stage_zero_stages.end());  // one per stage
    if (plan.zero_stage != least)
      r.fail(root["zero_stage"], "zero_stage", fmt::format("is {} where stage_zero_stages' least is {}", plan.zero_stage, least));
  }
  plan.distributed_optimizer = r.get<bool>(root, "distributed_optimizer", "distributed_optimizer");
  plan.sequence_parallel = r.get<bool>(root, "sequence_parallel", "sequence_parallel");
  if (const YAML::Node axes = root["replicate_axes"]; axes.IsDefined()) {
    r.sequence(axes, "replicate_axes");
    const hardware::DeviceMesh m = plan_mesh(plan, cluster);
    for (const YAML::Node& a : axes) {
      const std::string name = a.IsScalar() ? a.as<std::string>() : std::string();
      const int id = m.axis_index(name);
      if (id < 0) r.fail(a, "replicate_axes", "no mesh axis '" + name + "'");
      if (id == plan.pipeline_axis) r.fail(a, "replicate_axes", "'" + name + "' is the pipeline axis");
      if (std::find(plan.replicate_axes.begin(), plan.replicate_axes.end(), id) != plan.replicate_axes.end())
        r.fail(a, "replicate_axes", "'" + name + "' given twice");
      plan.replicate_axes.push_back(id);
    }
    if (!plan.replicate_axes.empty() && plan.zero_stage == 0 && !plan.distributed_optimizer)
      r.fail(axes, "replicate_axes", "replicas of sharded model states need zero_stage 1..3 or distributed_optimizer");
  }
  if (root["context_parallel_comm"].IsDefined())  // plans written before it existed: ring
    plan.context_parallel_comm = r.parse(root, "context_parallel_comm", "context_parallel_comm",
                                         [](const std::string& s) { return parse_context_parallel_comm(s); });
  if (root["moe_dispatcher"].IsDefined())  // absent: Megatron's default all-to-all
    plan.moe_dispatcher = r.parse(root, "moe_dispatcher", "moe_dispatcher",
                                  [](const std::string& s) { return parse_moe_dispatcher(s); });
  if (root["moe_comm_overlap"].IsDefined()) plan.moe_comm_overlap = r.get<bool>(root, "moe_comm_overlap", "moe_comm_overlap");
  if (root["moe_load_imbalance"].IsDefined()) {
    plan.moe_load_imbalance = r.get<double>(root, "moe_load_imbalance", "moe_load_imbalance");
    if (const std::string problem = moe_load_imbalance_problem(plan.moe_load_imbalance); !problem.empty())
      r.fail(root["moe_load_imbalance"], "moe_load_imbalance", problem);
  }
  if (!plan.recompute_layers.empty() && static_cast<int>(plan.recompute_layers.size()) != plan.pipeline_stages())
    r.fail(root["recompute_layers"], "recompute_layers",
           fmt::format("{} counts for {} pipeline stages", plan.recompute_layers.size(), plan.pipeline_stages()));
  if (plan.offload_layers > 0 && plan.pipeline_stages() > 1)
    r.fail(root["offload_layers"], "offload_layers", "needs one pipeline stage (Megatron-LM offloads only without pipelining)");
  MicroBatchCheck micro_batches(r, batch["micro_batches"], graph, plan);
  read_nodes(r, root, graph, plan_mesh(plan, cluster), plan, micro_batches);
  return plan;
}

Plan read_plan_yaml(const std::string& path, Graph& graph, const hardware::Cluster& cluster) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot read the plan file");
  std::stringstream text;
  text << f.rdbuf();
  return plan_from_yaml(text.str(), path, graph, cluster);
}

}  // namespace symtensor::compiler
