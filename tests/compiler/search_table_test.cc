// The closing table of the search work: SymTensor vs Megatron-best vs dp vs zero3 on
// (model, cluster, batch, seq) cases. Disabled by default (it takes minutes); run with
//   compiler_tests --gtest_also_run_disabled_tests --gtest_filter='*ClosingTable*'
// It prints a Markdown table: step time (s), peak memory per device (GiB, * = does not
// fit), search time (s), and the SymTensor plan's knobs.
#include <chrono>
#include <cstdio>
#include <functional>

#include <gtest/gtest.h>

#include "compiler/search/megatron_search.h"
#include "compiler/search/search_common.h"
#include "compiler/search/symtensor_search.h"
#include "compiler/strategies/data_parallel.h"
#include "tests/compiler/search_test_util.h"

namespace symtensor::compiler {
namespace {

struct TableCase {
  std::string label, preset;
  models::Overrides overrides;
  std::string profile;
  int nodes, gpus;
  double batch, seq;
};

struct Cell {
  std::string text;
  double step = 0;
};

Cell cell(const std::function<Plan()>& make, Graph& g, const hardware::Cluster& cluster, std::string* note = nullptr) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    Plan p = make();
    const double search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const Evaluation e = evaluate_plan(g, cluster, p);
    if (!e.valid) return {"invalid", 0};
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.3f / %.1f%s / %.1f", e.estimate.step_time_s, e.estimate.peak_memory / (1 << 30),
                  e.estimate.fits ? "" : "*", search_s);
    if (note) *note = p.strategy;
    return {buf, e.estimate.fits ? e.estimate.step_time_s : 0};
  } catch (const std::exception& ex) {
    return {std::string("error: ") + std::string(ex.what()).substr(0, 60), 0};
  }
}

TEST(SearchTable, DISABLED_ClosingTable) {
  auto ov = [](auto fn) {
    models::Overrides o;
    fn(o);
    return o;
  };
  const std::vector<TableCase> cases = {
      {"GPT 1.7B", "gpt-1.7b", {}, "dgx-a100", 2, 8, 64, 2048},
      {"GPT 7.5B", "gpt-7.5b", {}, "dgx-a100", 4, 8, 128, 2048},
      {"LLaMA-2 7B", "llama2-7b", {}, "dgx-a100", 4, 8, 64, 4096},
      {"LLaMA-2 13B", "llama2-13b", {}, "dgx-h100", 8, 8, 128, 4096},
      {"GPT 52 heads (h 6656, 16 layers)", "gpt-18.4b", ov([](auto& o) { o.heads = 52, o.hidden = 6656, o.layers = 16; }),
       "dgx-a100", 4, 8, 64, 2048},
      {"Mixtral 8x7B (8 of 32 layers)", "mixtral-8x7b", ov([](auto& o) { o.layers = 8; }), "dgx-h100", 4, 8, 64, 4096},
      {"LLaMA-2 7B, seq 32k", "llama2-7b", ov([](auto& o) { o.seq = 32768; }), "dgx-a100", 4, 8, 8, 32768},
      {"ViT-L/16", "vit-l16", {}, "dgx-a100", 1, 8, 1024, 0},
      {"GPT 1.7B on L4 (24 GB, PCIe)", "gpt-1.7b", {}, "pcie-l4", 2, 8, 32, 2048},
      {"GPT 1.7B on 24 GPUs", "gpt-1.7b", {}, "dgx-a100", 3, 8, 96, 2048},
      {"LLaMA-2 7B on 12 GPUs", "llama2-7b", {}, "dgx-a100", 3, 4, 48, 2048},
      {"GPT-3 175B on 1024 GPUs", "gpt3-175b", {}, "dgx-a100", 128, 8, 1536, 2048},
  };
  std::printf("\n| case | cluster | batch | seq | SymTensor | Megatron-best | dp | zero3 | SymTensor plan | Megatron knobs | speed-up |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const TableCase& c : cases) {
    Graph g = testing::zoo_graph(c.preset, c.overrides, c.batch, c.seq);
    const hardware::Cluster cluster = testing::cluster_of(c.profile, c.nodes, c.gpus);
    StrategyOptions o;
    std::string sym_plan, meg_knobs;
    const Cell sym = cell([&] {
      SearchResult r = symtensor_search(g, cluster, o);
      sym_plan = r.summary;
      return r.plan;
    }, g, cluster);
    const Cell meg = cell([&] {
      MegatronSearchResult r = megatron_search(g, cluster, o);
      meg_knobs = to_string(r.knobs);
      return r.plan;
    }, g, cluster);
    const Cell dp = cell([&] { return make_data_parallel_plan(g, cluster, o, 0); }, g, cluster);
    const Cell z3 = cell([&] { return make_data_parallel_plan(g, cluster, o, 3); }, g, cluster);
    char speedup[32] = "-";
    if (sym.step > 0 && meg.step > 0) std::snprintf(speedup, sizeof speedup, "%.2fx", meg.step / sym.step);
    std::printf("| %s | %s x%d | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %s |\n", c.label.c_str(), c.profile.c_str(),
                c.nodes * c.gpus, c.batch, c.seq, sym.text.c_str(), meg.text.c_str(), dp.text.c_str(), z3.text.c_str(),
                sym_plan.c_str(), meg_knobs.c_str(), speedup);
    std::fflush(stdout);
    EXPECT_FALSE(sym.text.rfind("error", 0) == 0) << c.label << ": " << sym.text;
  }
}

}  // namespace
}  // namespace symtensor::compiler
