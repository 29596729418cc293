#include "compiler/base/units.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace symtensor::compiler {

std::string format_si(double value, const std::string& unit) {
  static const char* prefixes[] = {"", "K", "M", "G", "T", "P", "E"};
  int i = 0;
  double v = value;
  while (std::fabs(v) >= 1000 && i < 6) {
    v /= 1000;
    ++i;
  }
  char buf[64];
  const std::string suffix = std::string(prefixes[i]) + unit;  // a bare count has none: "2.978", not "2.978 "
  std::snprintf(buf, sizeof buf, i == 0 ? "%.4g%s%s" : "%.3g%s%s", v, suffix.empty() ? "" : " ", suffix.c_str());
  return buf;
}

std::string format_bytes(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int i = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024 && i < 5) {
    v /= 1024;
    ++i;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, i == 0 ? "%.0f %s" : "%.2f %s", v, units[i]);
  return buf;
}

std::string format_count(double count) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", count);
  std::string digits = buf;
  std::string out;
  const std::size_t start = digits[0] == '-' ? 1 : 0;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > start && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string format_seconds(double seconds) {
  // Below a nanosecond is rounding noise of sums and differences (an empty bubble): 0.
  if (std::fabs(seconds) < 1e-9) return "0 s";
  char buf[64];
  if (seconds >= 1000) return format_count(std::round(seconds)) + " s";  // "1,800 s", not "1.8e+03 s"
  if (seconds >= 1) std::snprintf(buf, sizeof buf, "%.3g s", seconds);
  else if (seconds >= 1e-3) std::snprintf(buf, sizeof buf, "%.3g ms", seconds * 1e3);
  else std::snprintf(buf, sizeof buf, "%.3g us", seconds * 1e6);
  return buf;
}

std::string format_percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", fraction * 100);
  return buf;
}

std::string format_percent(std::optional<double> fraction) { return fraction ? format_percent(*fraction) : "n/a"; }

std::string format_duration(double seconds) {
  char buf[48];
  if (seconds >= 2 * 86400) std::snprintf(buf, sizeof buf, "%.1f days", seconds / 86400);
  else if (seconds >= 2 * 3600) std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600);
  else if (seconds >= 120) std::snprintf(buf, sizeof buf, "%.0f min", seconds / 60);
  else return format_seconds(seconds);
  return buf;
}

std::string describe_impractical_step(double step_time_s) {
  if (!(step_time_s > kImpracticalStepS)) return "";
  return "impractical: " + format_duration(step_time_s) + " per step, 10,000 steps in " + format_duration(1e4 * step_time_s);
}

std::string describe_step_time(double step_time_s) {
  const std::string impractical = describe_impractical_step(step_time_s);
  return format_seconds(step_time_s) + (impractical.empty() ? "" : " (" + impractical + ")");
}

std::string format_throughput(double samples_per_s, double tokens_per_sample) {
  return tokens_per_sample > 0 ? format_si(samples_per_s * tokens_per_sample, "tokens/s") : format_si(samples_per_s, "samples/s");
}

std::string describe_throughput(double samples_per_s, double tokens_per_sample) {
  return format_throughput(samples_per_s, tokens_per_sample) +
         (tokens_per_sample > 0 ? " (" + format_si(samples_per_s, "samples/s") + ")" : "");
}

std::string format_usd(double dollars) {
  if (dollars < 100) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "$%.2f", dollars);
    return buf;
  }
  return "$" + format_count(dollars);
}

std::string to_text(const GiNaC::ex& e) {
  std::ostringstream os;
  os << e;
  return os.str();
}

}  // namespace symtensor::compiler
