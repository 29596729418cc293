#include "simulator/program/synthetic.h"

#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "simulator/program/mesh_groups.h"
#include "simulator/program/task_factory.h"

namespace symtensor::sim {

namespace {

using hardware::Collective;

struct StageBuilder {
  const SyntheticConfig& cfg;
  int stage;
  int layers;
  std::vector<std::string> dp_axes;
  RankClass& rc;

  std::string name(int s) const { return fmt::format("stage{}", s); }
  bool first() const { return stage == 0; }
  bool last() const { return stage == cfg.pp - 1; }

  std::string half(const std::string& id, double factor, std::string prev) {
    if (cfg.layer_forward_seconds > 0)
      rc.tasks.push_back(timed_task(id, cfg.layer_forward_seconds * factor / 2, {prev}));
    else
      rc.tasks.push_back(compute_task(id, cfg.layer_forward_flops * factor / 2, 0, cfg.precision, {prev}));
    if (cfg.tp == 1) return id;
    rc.tasks.push_back(collective_task(id + ".ar", "comm_tp", Collective::all_reduce, cfg.tp_allreduce_bytes, {"tp"}, {id}));
    return id + ".ar";
  }

  void forward(int mb) {
    std::string prev = fmt::format("a{}", mb);
    rc.tasks.push_back(alloc_task(prev, std::string(kComputeStream), cfg.layer_activation_bytes * layers,
                                  fmt::format("activations mb{}", mb)));
    if (!first()) {
      rc.tasks.push_back(recv_task(fmt::format("rf{}", mb), "p2p_recv", name(stage - 1), cfg.p2p_bytes));
      prev = rc.tasks.back().id;  // the alloc runs first anyway: it precedes the layers on the compute stream
    }
    for (int l = 0; l < layers; ++l) {
      prev = half(fmt::format("f{}.{}.attn", mb, l), 1, prev);
      prev = half(fmt::format("f{}.{}.mlp", mb, l), 1, prev);
    }
    if (!last()) rc.tasks.push_back(send_task(fmt::format("sf{}", mb), "p2p_send", name(stage + 1), cfg.p2p_bytes, {prev}));
    last_forward = prev;
  }

  void backward(int mb) {
    std::string prev = fmt::format("f{}.{}.mlp", mb, layers - 1);
    if (cfg.tp > 1) prev += ".ar";
    if (!last()) {
      rc.tasks.push_back(recv_task(fmt::format("rb{}", mb), "p2p_recv", name(stage + 1), cfg.p2p_bytes));
      prev = rc.tasks.back().id;
    }
    bool final_mb = mb == cfg.micro_batches - 1;
    for (int l = layers - 1; l >= 0; --l) {
      prev = half(fmt::format("b{}.{}.mlp", mb, l), 2, prev);
      prev = half(fmt::format("b{}.{}.attn", mb, l), 2, prev);
      if (final_mb && cfg.dp > 1) {
        rc.tasks.push_back(collective_task(fmt::format("g{}", l), "comm_dp", Collective::all_reduce,
                                           cfg.layer_grad_bytes, dp_axes, {prev}));
        grads.push_back(rc.tasks.back().id);
      }
    }
    rc.tasks.push_back(free_task(fmt::format("d{}", mb), std::string(kComputeStream), cfg.layer_activation_bytes * layers,
                                 fmt::format("activations mb{}", mb), {prev}));
    if (!first()) rc.tasks.push_back(send_task(fmt::format("sb{}", mb), "p2p_send", name(stage - 1), cfg.p2p_bytes, {prev}));
  }

  void build() {
    int m = cfg.micro_batches;
    if (cfg.schedule == PipelineSchedule::gpipe) {
      for (int i = 0; i < m; ++i) forward(i);
      for (int i = 0; i < m; ++i) backward(i);
    } else {
      int warmup = std::min(cfg.pp - stage - 1, m);
      for (int i = 0; i < warmup; ++i) forward(i);
      for (int i = 0; i + warmup < m; ++i) {
        forward(i + warmup);
        backward(i);
      }
      for (int i = m - warmup; i < m; ++i) backward(i);
    }
    Deps after = grads.empty() ? Deps{fmt::format("d{}", m - 1)} : grads;
    rc.tasks.push_back(timed_task("optimizer", cfg.optimizer_seconds, after, TaskKind::optimizer));
  }

  std::string last_forward;
  std::vector<std::string> grads;
};

}  // namespace

Program synthetic_pipeline_program(const SyntheticConfig& cfg) {
  if (cfg.tp < 1 || cfg.pp < 1 || cfg.dp < 1 || cfg.micro_batches < 1 || cfg.layers < 1 || cfg.gpus_per_node < 1)
    throw std::runtime_error("synthetic program: tp, pp, dp, micro_batches, layers and gpus_per_node must be >= 1");
  if (cfg.layers % cfg.pp != 0)
    throw std::runtime_error(fmt::format("synthetic program: {} layers do not divide into {} stages", cfg.layers, cfg.pp));
  if (cfg.gpus_per_node % cfg.tp != 0)
    throw std::runtime_error(fmt::format("synthetic program: tp {} does not divide {} GPUs per node", cfg.tp, cfg.gpus_per_node));
  int room = cfg.gpus_per_node / cfg.tp;
  int dp_local = std::gcd(cfg.dp, room);
  int pp_local = std::gcd(cfg.pp, room / dp_local);
  Program p;
  p.name = fmt::format("synthetic tp{} pp{} dp{} m{} l{}", cfg.tp, cfg.pp, cfg.dp, cfg.micro_batches, cfg.layers);
  auto add = [&](const std::string& n, int size, int level) {
    if (size > 1) p.mesh.push_back({n, size, level, 1});
  };
  int pp_outer = cfg.pp / pp_local, dp_outer = cfg.dp / dp_local;
  add(pp_local > 1 ? "pp" : "pp", pp_outer, 1);
  add("dp", dp_outer, 1);
  add(pp_outer > 1 ? "pp_local" : "pp", pp_local, 0);
  add(dp_outer > 1 ? "dp_local" : "dp", dp_local, 0);
  add("tp", cfg.tp, 0);
  if (p.mesh.empty()) p.mesh.push_back({"tp", 1, 0, 1});
  assign_default_strides(p.mesh);
  std::vector<std::string> dp_axes;
  for (const auto& a : p.mesh)
    if (a.name == "dp" || a.name == "dp_local") dp_axes.push_back(a.name);
  int n = mesh_size(p.mesh);
  auto axis_coord = [&](const char* axis, int rank) {
    int i = axis_index(p.mesh, axis);
    return i < 0 ? 0 : coordinate(p.mesh[i], rank);
  };
  for (int s = 0; s < cfg.pp; ++s) {
    RankClass rc;
    rc.name = fmt::format("stage{}", s);
    rc.static_memory = cfg.static_memory;
    p.rank_classes.push_back(std::move(rc));
  }
  for (int r = 0; r < n; ++r) {
    int stage = pp_outer > 1 ? axis_coord("pp", r) * pp_local + axis_coord("pp_local", r) : axis_coord("pp", r);
    p.rank_classes[stage].ranks.push_back(r);
  }
  for (int s = 0; s < cfg.pp; ++s) {
    StageBuilder b{cfg, s, cfg.layers / cfg.pp, dp_axes, p.rank_classes[s], {}, {}};
    b.build();
  }
  return p;
}

}  // namespace symtensor::sim
