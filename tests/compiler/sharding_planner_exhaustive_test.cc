// Every pair of shardings of a rank-2 tensor on small meshes: the planner reaches the
// target, each step is a legal move of its kind, and the dual plan exists too.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "compiler/sharding/redistribution.h"

namespace symtensor::compiler {
namespace {

using Kind = RedistributionKind;
using Axes = std::vector<int>;

hardware::Cluster cluster_2x4() {
  hardware::Cluster c;
  c.name = "test-2x4";
  hardware::TopologyLevel gpu, node;
  gpu.name = "gpu";
  gpu.size = 4;
  node.name = "node";
  node.size = 2;
  c.levels = {gpu, node};
  return c;
}

// Each axis replicated, partial, or on dim 0 or 1, in every order within a dim.
std::vector<TensorSharding> all_shardings(int num_axes) {
  std::vector<TensorSharding> out;
  std::vector<int> place(static_cast<std::size_t>(num_axes), 0);  // 0 R, 1 P, 2 dim0, 3 dim1
  std::function<void(int)> assign = [&](int a) {
    if (a == num_axes) {
      TensorSharding s = TensorSharding::replicated(2);
      Axes d0, d1;
      for (int i = 0; i < num_axes; ++i) {
        if (place[i] == 1) s.partial_axes.push_back(i);
        if (place[i] == 2) d0.push_back(i);
        if (place[i] == 3) d1.push_back(i);
      }
      do {
        Axes e1 = d1;
        do {
          s.dim_axes = {d0, e1};
          out.push_back(s);
        } while (std::next_permutation(e1.begin(), e1.end()));
      } while (std::next_permutation(d0.begin(), d0.end()));
      return;
    }
    for (int p = 0; p < 4; ++p) {
      place[static_cast<std::size_t>(a)] = p;
      assign(a + 1);
    }
  };
  assign(0);
  return out;
}

bool erased(const Axes& before, const Axes& after, const Axes& run) {
  return before.size() >= run.size() && std::equal(run.begin(), run.end(), before.end() - static_cast<long>(run.size())) &&
         Axes(before.begin(), before.end() - static_cast<long>(run.size())) == after;
}
bool appended(const Axes& before, const Axes& after, const Axes& run) { return erased(after, before, run); }

// The step's before/after differ exactly as its kind says.
void expect_legal(const RedistributionStep& step) {
  const auto& b = step.before;
  const auto& a = step.after;
  const auto d = static_cast<std::size_t>(step.dim);
  switch (step.kind) {
    case Kind::slice:
    case Kind::reduce_scatter:
      EXPECT_TRUE(appended(b.dim_axes[d], a.dim_axes[d], step.axes));
      for (int x : step.axes) EXPECT_EQ(b.is_partial(x), step.kind == Kind::reduce_scatter);
      break;
    case Kind::all_gather:
      EXPECT_TRUE(erased(b.dim_axes[d], a.dim_axes[d], step.axes));
      for (int x : step.axes) EXPECT_TRUE(a.replicates(x));
      break;
    case Kind::all_to_all:
      EXPECT_TRUE(erased(b.dim_axes[d], a.dim_axes[d], step.axes));
      EXPECT_TRUE(appended(b.dim_axes[static_cast<std::size_t>(step.to_dim)],
                           a.dim_axes[static_cast<std::size_t>(step.to_dim)], step.axes));
      break;
    case Kind::all_reduce:
      EXPECT_EQ(b.dim_axes, a.dim_axes);
      for (int x : step.axes) EXPECT_TRUE(b.is_partial(x) && a.replicates(x));
      break;
  }
}

void check_all_pairs(const hardware::DeviceMesh& mesh) {
  const auto shardings = all_shardings(static_cast<int>(mesh.axes().size()));
  const std::vector<GiNaC::ex> shape{GiNaC::numeric(48), GiNaC::numeric(40)};
  int planned = 0;
  for (const auto& from : shardings) {
    for (const auto& to : shardings) {
      const bool reachable = std::all_of(to.partial_axes.begin(), to.partial_axes.end(),
                                         [&](int a) { return from.is_partial(a); });
      if (!reachable) {
        EXPECT_THROW(plan_redistribution(from, to, shape, 2, mesh), std::runtime_error);
        continue;
      }
      const Redistribution r = plan_redistribution(from, to, shape, 2, mesh);
      TensorSharding at = from;
      for (const auto& step : r.steps) {
        ASSERT_EQ(step.before, at) << to_string(from, mesh) << " -> " << to_string(to, mesh);
        expect_legal(step);
        at = step.after;
      }
      ASSERT_EQ(at, to) << to_string(from, mesh) << " -> " << to_string(to, mesh);
      // A sharding never needs more collectives than it has axes, plus a gather and a slice each.
      EXPECT_LE(r.steps.size(), 3 * mesh.axes().size());
      EXPECT_NO_THROW(plan_dual(r, mesh));
      ++planned;
    }
  }
  EXPECT_GT(planned, 0);
}

TEST(ShardingPlannerExhaustive, AllPairsOnTwoAxes) {
  const auto mesh = hardware::DeviceMesh::from_cluster(cluster_2x4());
  EXPECT_EQ(all_shardings(2).size(), 18u);  // 4*4 placements, 2 orders when both split one dim
  check_all_pairs(mesh);
}

TEST(ShardingPlannerExhaustive, AllPairsOnThreeAxes) {
  // node (2) x gpu0 (2) x gpu1 (2): the node level factored 2x2.
  const auto mesh = hardware::DeviceMesh::factored(cluster_2x4(), {{2}, {2, 2}});
  ASSERT_EQ(mesh.axes().size(), 3u);
  EXPECT_EQ(mesh.axes()[1].name, "gpu0");
  check_all_pairs(mesh);
}

}  // namespace
}  // namespace symtensor::compiler
