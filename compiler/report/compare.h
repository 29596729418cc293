#pragma once
// `symtensor compare`: every requested strategy's plan, its analytic estimate, its
// simulation (the referee), its step-time formula and explanation, and the break-even
// points between the formulas. A strategy that cannot be made or priced is a row with the
// reason, never a failed run.
#include <functional>
#include <string>
#include <vector>

#include "compiler/fusion/fusion_pass.h"
#include "compiler/report/results.h"
#include "compiler/strategies/strategy.h"
#include "hardware/cluster.h"

namespace symtensor::compiler {

struct CompareOptions {
  std::string model;
  FusionOptions fusion;    // the fusion pass on import (--attention)       // ONNX file
  std::string bind;        // "batch=8,seq=2048"
  std::string batch_dim, sequence_dim;  // --batch-dim, --seq-dim (empty: found, `seq`)
  std::vector<std::string> strategies{"symtensor", "megatron", "dp", "zero3"};
  std::string megatron;    // fixed knobs; empty: the best of a small grid
  // The strategies' options beside the knobs: StrategyOptions::bound (or target_seed) of
  // `compare --stack T` (--unbounded).
  StrategyOptions strategy;
  bool simulate = true;    // false: analytic only (a mixed fleet is simulated all the same)
  std::function<void(const std::string&)> progress;  // one line per step, may be empty
};

CompareResults run_compare(const CompareOptions& options, const hardware::Cluster& cluster);

// Whether run_compare simulates its rows: as asked, and on a mixed fleet always (the simulation
// plays each rank on its own group's device and NIC, where the analytic estimate prices the
// links and the optimizer at the fleet's uniform view).
bool compare_simulates(const CompareOptions& options, const hardware::Cluster& cluster);

// A strategy compare can run: one make_plan knows (the plan-file strategy aside) or, with
// `with_mimo`, megatron-mimo or symtensor-mimo (compiler/report/mimo.h). Throws "WHERE: unknown strategy 'X'
// (known: ...)" for any other name.
void check_compare_strategy(const std::string& name, const std::string& where, bool with_mimo);

}  // namespace symtensor::compiler
