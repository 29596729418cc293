// Speed of the collective cost model: the search calls collective_time() in its inner loop,
// so it must stay well under a microsecond. The symbolic path is shown for comparison.
#include <benchmark/benchmark.h>

#include "hardware/collective_expr.h"
#include "hardware/collectives.h"

namespace {

using namespace symtensor::hardware;

const Cluster& cluster() {
  static const Cluster c = scale_cluster(load_cluster("dgx-a100"), 16, std::nullopt);
  return c;
}

void BM_CollectiveTimeAutomaticTwoLevels(benchmark::State& state) {
  const GroupShape group{{8, 16}};
  double bytes = 1e6;
  for (auto _ : state) {
    benchmark::DoNotOptimize(collective_time(cluster(), Collective::all_reduce, group, bytes));
    bytes = bytes < 1e10 ? bytes * 1.01 : 1e6;
  }
}
BENCHMARK(BM_CollectiveTimeAutomaticTwoLevels);

void BM_CollectiveTimeRingOneLevel(benchmark::State& state) {
  const GroupShape group{{8, 1}};
  double bytes = 1e6;
  for (auto _ : state) {
    benchmark::DoNotOptimize(collective_time(cluster(), Collective::all_gather, group, bytes, CollectiveAlgorithm::ring));
    bytes = bytes < 1e10 ? bytes * 1.01 : 1e6;
  }
}
BENCHMARK(BM_CollectiveTimeRingOneLevel);

void BM_CollectiveTimeEveryKind(benchmark::State& state) {
  const GroupShape group{{4, 8}};
  const Collective kinds[] = {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter,
                              Collective::all_to_all, Collective::broadcast,  Collective::reduce, Collective::send_recv};
  for (auto _ : state) {
    for (Collective k : kinds) benchmark::DoNotOptimize(collective_time(cluster(), k, group, 3e7));
  }
  state.SetItemsProcessed(state.iterations() * 7);
}
BENCHMARK(BM_CollectiveTimeEveryKind);

void BM_SymbolicEvaluate(benchmark::State& state) {
  const GroupShape group{{8, 16}};
  std::vector<LevelSymbols> symbols = make_level_symbols(cluster());
  GiNaC::symbol n("N");
  GiNaC::ex formula = collective_time_expr(Collective::all_reduce, CollectiveAlgorithm::automatic,
                                           spanned_levels(symbols, group), n);
  GiNaC::exmap values = level_values(cluster(), symbols, group);
  values[n] = 1e8;
  for (auto _ : state) benchmark::DoNotOptimize(evaluate_seconds(formula, values));
}
BENCHMARK(BM_SymbolicEvaluate);

}  // namespace
