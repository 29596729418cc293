#pragma once
// Human-readable numbers with units, for every table SymTensor prints.
#include <optional>
#include <string>

#include "hardware/symbolic.h"

namespace symtensor::compiler {

std::string format_si(double value, const std::string& unit);  // 1.23 G<unit>, 456 M<unit>
std::string format_bytes(double bytes);                         // binary: 1.50 GiB
std::string format_count(double count);                         // 124,439,808
std::string format_seconds(double seconds);                     // 12.3 ms, 4.56 s, 1,800 s
std::string format_percent(double fraction);                    // 0.423 -> 42.3 %
std::string format_percent(std::optional<double> fraction);     // the same, "n/a" when absent
std::string format_duration(double seconds);                    // 3.2 days, 5.1 h, 12 min
std::string format_usd(double dollars);                         // $1,234,567
std::string to_text(const GiNaC::ex& e);                        // GiNaC's printed form
// "" for a step a training run can take; past ten minutes a step, why it cannot:
// "impractical: 4.17 h per step, 10,000 steps in 4.8 years".
std::string describe_impractical_step(double step_time_s);
// A step time, and past ten minutes why it is impractical: "4.56 s", "1,800 s (impractical:
// 30 min per step, 10,000 steps in 208.3 days)".
std::string describe_step_time(double step_time_s);
// Throughput to significant digits (never "0.00"): tokens/s where the model has a sequence
// (tokens_per_sample > 0), else samples/s: "178 Mtokens/s", "5.55 Msamples/s".
std::string format_throughput(double samples_per_s, double tokens_per_sample);
// The same with samples/s beside tokens/s: "178 Mtokens/s (5.55 Msamples/s)".
std::string describe_throughput(double samples_per_s, double tokens_per_sample);
// The practical step limit of describe_impractical_step, in seconds.
inline constexpr double kImpracticalStepS = 600;

}  // namespace symtensor::compiler
