// Arrivals (Poisson, traces) and the metrics of a serving run (serving.h).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "simulator/serving/serving.h"

namespace symtensor::sim {

std::vector<ServingRequest> poisson_requests(double rate, int count, std::int64_t input, std::int64_t output,
                                             std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  std::vector<ServingRequest> out;
  out.reserve(std::max(count, 0));
  double t = 0;
  for (int i = 0; i < count; ++i) {
    out.push_back({t, input, output});
    t += gap(rng);
  }
  return out;
}

namespace {

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

}  // namespace

std::vector<ServingRequest> read_request_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot read the request trace", path));
  std::vector<ServingRequest> out;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    std::stringstream ss(line);
    for (std::string f; std::getline(ss, f, ',');) fields.push_back(trim(f));
    auto fail = [&](const std::string& problem) {
      throw std::runtime_error(fmt::format("{}:{}: {} (expected arrival_s,input_tokens,output_tokens)", path, number, problem));
    };
    if (fields.size() != 3) fail(fmt::format("{} fields", fields.size()));
    if (out.empty() && number == 1 && !fields[0].empty() && std::isalpha(static_cast<unsigned char>(fields[0][0]))) continue;
    ServingRequest r;
    try {
      std::size_t used = 0;
      r.arrival_s = std::stod(fields[0], &used);
      if (used != fields[0].size()) fail("arrival '" + fields[0] + "' is not a number");
      r.input_tokens = std::stoll(fields[1], &used);
      if (used != fields[1].size()) fail("input '" + fields[1] + "' is not an integer");
      r.output_tokens = std::stoll(fields[2], &used);
      if (used != fields[2].size()) fail("output '" + fields[2] + "' is not an integer");
    } catch (const std::invalid_argument&) {
      fail("a field is not a number");
    } catch (const std::out_of_range&) {
      fail("a field is out of range");
    }
    if (!std::isfinite(r.arrival_s) || r.arrival_s < 0) fail("arrival must be a finite time >= 0");
    if (r.input_tokens < 1 || r.output_tokens < 1) fail("input and output must be at least 1 token");
    if (!out.empty() && r.arrival_s < out.back().arrival_s) fail("arrivals must not decrease");
    out.push_back(r);
  }
  if (out.empty()) throw std::runtime_error(fmt::format("{}: the request trace holds no requests", path));
  return out;
}

Distribution distribution(std::vector<double> values) {
  Distribution d;
  d.count = values.size();
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  d.mean = sum / values.size();
  auto rank = [&](double q) {  // nearest rank
    const std::size_t k = static_cast<std::size_t>(std::ceil(q * values.size()));
    return values[std::min(values.size() - 1, k == 0 ? 0 : k - 1)];
  };
  d.p50 = rank(0.5);
  d.p90 = rank(0.9);
  d.p99 = rank(0.99);
  return d;
}

ServingMetrics serving_metrics(const ServingRun& run, const ServingSlo& slo) {
  ServingMetrics m;
  std::vector<double> ttft, tpot, e2e;
  double first = std::numeric_limits<double>::infinity(), last = 0;
  double output = 0, total = 0, good = 0, good_output = 0;
  for (const RequestRecord& r : run.requests) {
    first = std::min(first, r.arrival_s);
    last = std::max(last, r.finish_s);
    const double t = r.first_token_s - r.arrival_s, e = r.finish_s - r.arrival_s;
    ttft.push_back(t);
    e2e.push_back(e);
    double p = 0;
    if (r.output_tokens > 1) {
      p = (e - t) / static_cast<double>(r.output_tokens - 1);
      tpot.push_back(p);
    }
    output += r.output_tokens;
    total += r.input_tokens + r.output_tokens;
    const bool meets = (slo.ttft_s <= 0 || t <= slo.ttft_s) && (slo.tpot_s <= 0 || p <= slo.tpot_s);
    if (meets) {
      ++good;
      good_output += r.output_tokens;
    }
  }
  m.ttft = distribution(std::move(ttft));
  m.tpot = distribution(std::move(tpot));
  m.e2e = distribution(std::move(e2e));
  m.itl = distribution(run.inter_token_s);
  m.duration_s = run.requests.empty() ? 0 : last - first;
  if (m.duration_s > 0) {
    m.requests_per_s = run.requests.size() / m.duration_s;
    m.output_tokens_per_s = output / m.duration_s;
    m.total_tokens_per_s = total / m.duration_s;
    m.goodput_requests_per_s = good / m.duration_s;
    m.goodput_output_tokens_per_s = good_output / m.duration_s;
  }
  m.slo_attainment = run.requests.empty() ? 1 : good / run.requests.size();
  return m;
}

}  // namespace symtensor::sim
