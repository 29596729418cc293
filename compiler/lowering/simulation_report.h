#pragma once
// What `symtensor simulate` reports: step time, throughput, MFU/HFU, the breakdown of the
// critical stage, and memory per stage against capacity. JSON keys are documented in
// compiler/lowering/README.md and are stable.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/analysis/palm_flops.h"
#include "compiler/cost/plan_analysis.h"
#include "compiler/plan/plan.h"
#include "hardware/cluster.h"
#include "simulator/stats/result.h"

namespace symtensor::compiler {

struct StageReport {
  std::string name;
  int ranks = 0;
  int group = -1;  // on a mixed fleet, the group all its ranks lie in (batch shares: one class per stage and group); else -1
  double finish_s = 0;
  double compute_s = 0, exposed_comm_s = 0, bubble_s = 0, optimizer_s = 0;
  double static_memory_bytes = 0, peak_memory_bytes = 0;
  double memory_capacity_bytes = 0;  // its devices' usable memory (a fleet's differ by group)
  bool out_of_memory = false;
  double overage_bytes = 0;
};

struct SimulationReport {
  bool full_mode = false;
  int devices = 0;
  double step_time_s = 0;
  double samples_per_s = 0;
  double tokens_per_s = 0;       // 0 when the tokens per sample are unknown
  double model_flops = 0;        // per step, all devices: forward + backward, no recompute
  double hardware_flops = 0;     // with the recomputed forward
  double mfu = 0, hfu = 0;       // over devices x peak(precision) x step time (kExactMfuLabel)
  // MFU under 6N + 12Lhs (palm_mfu), nullopt where that convention does not apply; `palm`
  // holds its terms.
  std::optional<double> mfu_6n;
  PalmFlops palm;
  // The stage that finishes last (the critical one): compute (without optimizer), exposed
  // communication, pipeline bubble (idle not explained by collectives), optimizer.
  std::string critical_stage;
  double compute_s = 0, exposed_comm_s = 0, bubble_s = 0, optimizer_s = 0;
  // The critical stage's collectives by kind (busy time, overlapped or not).
  std::map<std::string, double> collectives_s;
  double device_memory_bytes = 0;
  bool fits = true;
  std::vector<StageReport> stages;
  MoeLoad moe_load;  // the routing load priced (compiler/cost/moe_load.h)
};

// `tokens_per_sample` (e.g. the sequence length) gives tokens/s; 0 leaves it out. `palm`:
// the graph's palm_flops.
SimulationReport make_report(const PlanAnalysis& analysis, const Plan& plan, const hardware::Cluster& cluster,
                             const sim::SimResult& result, double tokens_per_sample, const PalmFlops& palm);

nlohmann::json report_to_json(const SimulationReport& report, const Plan& plan);
// The terms of the 6N + 12Lhs MFU ("N = 124,439,808 parameters, L = 12, h = 768, s = 1024"),
// or why it does not apply ("not applicable (no transformer layers found)").
std::string describe_palm_flops(const PalmFlops& palm);
// simulate's text; `label` names the plan (report/plan_label's "dp tp=1 dp=4 pp=1 ...").
std::string report_text(const SimulationReport& report, const Plan& plan, const std::string& label);

}  // namespace symtensor::compiler
