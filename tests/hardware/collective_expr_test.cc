#include <sstream>
#include <stdexcept>

#include <gtest/gtest.h>

#include "hardware/collective_expr.h"

namespace symtensor::hardware {
namespace {

const Collective kAll[] = {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter, Collective::all_to_all,
                           Collective::broadcast,  Collective::reduce,     Collective::send_recv};
const CollectiveAlgorithm kAlgorithms[] = {CollectiveAlgorithm::automatic, CollectiveAlgorithm::ring, CollectiveAlgorithm::tree,
                                           CollectiveAlgorithm::hierarchical};

TEST(CollectiveExpr, SymbolicFormAgreesWithNumericEverywhere) {
  for (const std::string& name : list_profiles()) {
    Cluster cluster = scale_cluster(load_cluster(name), 4, std::nullopt);
    std::vector<LevelSymbols> symbols = make_level_symbols(cluster);
    GiNaC::symbol n("N");
    for (int gpus : {1, 2, 3, 6, 8}) {
      for (int nodes : {1, 2, 3, 4}) {
        GroupShape group{{gpus, nodes}};
        GiNaC::exmap values = level_values(cluster, symbols, group);
        for (Collective kind : kAll) {
          for (CollectiveAlgorithm algorithm : kAlgorithms) {
            GiNaC::ex formula = collective_time_expr(kind, algorithm, spanned_levels(symbols, group), n);
            for (double bytes : {8.0, 65536.0, 3e7, 1e10}) {
              GiNaC::exmap with_bytes = values;
              with_bytes[n] = bytes;
              double symbolic = evaluate_seconds(formula, with_bytes);
              double numeric = collective_time(cluster, kind, group, bytes, algorithm).seconds;
              ASSERT_NEAR(symbolic, numeric, 1e-12 * numeric + 1e-18)
                  << name << " " << to_string(kind) << " " << to_string(algorithm) << " " << gpus << "x" << nodes << " "
                  << bytes << " bytes: " << formula;
            }
          }
        }
      }
    }
  }
}

TEST(CollectiveExpr, HierarchicalAllReduceIsTheTwoLevelFormulaSymbolically) {
  GiNaC::symbol g("g"), m("n"), a1("a1"), b1("B1"), a2("a2"), b2("B2"), N("N");
  GiNaC::ex formula = collective_time_expr(Collective::all_reduce, CollectiveAlgorithm::hierarchical,
                                           {{g, b1, a1}, {m, b2, a2}}, N);
  // CALIBRATION.md, two-level all-reduce.
  GiNaC::ex hand = 2 * ((g - 1) * a1 + (g - 1) / g * N / b1) + 2 * (m - 1) * a2 + 2 * (m - 1) / m * (N / g) / b2;
  EXPECT_TRUE((formula - hand).normal().is_zero()) << formula;
  GiNaC::ex ring = collective_time_expr(Collective::all_reduce, CollectiveAlgorithm::ring, {{g, b1, a1}}, N);
  EXPECT_TRUE((ring - (2 * (g - 1) * a1 + 2 * (g - 1) / g * N / b1)).normal().is_zero()) << ring;
}

TEST(CollectiveExpr, PrintsInNamedSymbolsAndHelperFunctionsEvaluate) {
  Cluster cluster = load_cluster("dgx-a100");
  std::vector<LevelSymbols> symbols = make_level_symbols(cluster);
  GroupShape all{{8, 4}};
  std::ostringstream text;
  text << collective_time_expr(Collective::all_reduce, CollectiveAlgorithm::automatic, spanned_levels(symbols, all),
                               GiNaC::symbol("bytes"));
  for (const char* expected : {"p_gpu", "p_node", "B_gpu", "B_node", "alpha_node", "min_of", "max_of", "ceil_log2", "bytes"}) {
    EXPECT_NE(text.str().find(expected), std::string::npos) << expected << " missing from " << text.str();
  }
  EXPECT_EQ(ceil_log2(GiNaC::ex(1)), GiNaC::ex(0));
  EXPECT_EQ(ceil_log2(GiNaC::ex(6)), GiNaC::ex(3));
  EXPECT_EQ(ceil_log2(GiNaC::ex(8)), GiNaC::ex(3));
  EXPECT_EQ(ceil_log2(GiNaC::ex(9)), GiNaC::ex(4));
  EXPECT_EQ(min_of(GiNaC::ex(3), GiNaC::ex(2)), GiNaC::ex(2));
  EXPECT_EQ(max_of(GiNaC::ex(3), GiNaC::ex(2)), GiNaC::ex(3));
  GiNaC::symbol x("x");
  EXPECT_FALSE(GiNaC::is_a<GiNaC::numeric>(min_of(x, 2)));
  EXPECT_EQ(GiNaC::ex(min_of(x, 2)).subs(GiNaC::exmap{{x, 1}}), GiNaC::ex(1));
  EXPECT_EQ(collective_time_expr(Collective::all_reduce, CollectiveAlgorithm::ring, {}, x), GiNaC::ex(0));
  EXPECT_THROW(evaluate_seconds(x + 1, {}), std::runtime_error);
  EXPECT_THROW(spanned_levels(symbols, GroupShape{{8}}), std::runtime_error);
}

}  // namespace
}  // namespace symtensor::hardware
